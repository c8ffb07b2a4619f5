"""A synthetic tekken.json of any vocabulary size, for benchmark models.

The control tokens, split pattern and ``audio`` section are copied from the committed fixture
tokenizer (tests/data/reference/tiny_wide/hf/tekken.json: the real control ids, loadable by
mistral-common); the normal vocabulary is the 256 single bytes followed by distinct made-up words,
enough to fill ``n_vocab``. Speed does not depend on which bytes a token holds.
"""

from __future__ import annotations

import base64
import json
import string
from pathlib import Path

FIXTURE_TEKKEN = Path(__file__).resolve().parent.parent / "tests/data/reference/tiny_wide/hf/tekken.json"


def _word(i: int) -> bytes:
    """Distinct lowercase word for every i >= 0 (bijective base 26), with a leading space."""
    letters = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        letters = string.ascii_lowercase[r] + letters
    return (" " + letters).encode("ascii")


def write_tekken(path: Path, n_vocab: int) -> None:
    """Write a tekken.json whose vocabulary (control + normal tokens) has exactly ``n_vocab`` ids."""
    base = json.loads(FIXTURE_TEKKEN.read_text(encoding="utf-8"))
    n_special = int(base["config"]["default_num_special_tokens"])
    n_normal = n_vocab - n_special
    if n_normal < 256:
        raise ValueError(f"n_vocab {n_vocab} leaves fewer than 256 normal tokens after {n_special} specials")
    pieces = [bytes([b]) for b in range(256)] + [_word(i) for i in range(n_normal - 256)]
    base["config"].update(num_vocab_tokens=n_normal, default_vocab_size=n_vocab)
    base["vocab"] = [
        {
            "rank": r,
            "token_bytes": base64.b64encode(p).decode("ascii"),
            "token_str": p.decode("ascii") if p.isascii() else None,
        }
        for r, p in enumerate(pieces)
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(base, ensure_ascii=False) + "\n", encoding="utf-8")
