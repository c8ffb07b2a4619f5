"""The demo model's vocabulary and its tekken tokenizer file (dev-only; numpy-free, torch-free).

The demo model (issue 5) recognises 28 words. Its tokenizer follows the real Voxtral Realtime
tekken layout so that mistral-common, the converter and the engine treat it like the real one:

* ranks 0..999 are control tokens with the real ids (BOS 1, EOS 2, [STREAMING_PAD] 32,
  [STREAMING_WORD] 33), the rest ``<SPECIAL_n>`` fillers;
* the normal vocabulary starts with the 256 single bytes, then every space-prefixed prefix of
  every word (" z", " ze", " zer", " zero", ...) ordered by length. Tekken encodes with
  tiktoken's rank-ordered byte-pair merges, so a word token is only reachable when each of its
  space-prefixed prefixes is a token too; the prefixes are that merge path and are never targets.

Each word therefore encodes as exactly one token, its leading space included (" zero"), and a
transcript "zero one" decodes from the ids of " zero" and " one". Usage::

    from tools.demo_vocab import write_tekken, word_token_id
    write_tekken(Path("tekken.json"))
    word_token_id("hello")  # the id the demo model emits for " hello"
"""

from __future__ import annotations

from pathlib import Path

from tools.tekken_table import N_SPECIAL, tekken_json, write_json

DEMO_WORDS: tuple[str, ...] = tuple(
    "zero one two three four five six seven eight nine oh yes no up down left right on off stop go "
    "hello world start next back okay captions".split()
)

BOS_ID = 1
EOS_ID = 2
STREAMING_PAD_ID = 32
STREAMING_WORD_ID = 33
SAMPLE_RATE = 16000


def normal_pieces() -> list[bytes]:
    """The normal vocabulary in rank order: 256 single bytes, then the words' space-prefixed
    prefixes of length >= 2 (each word's full piece among them), shorter first, then by bytes."""
    prefixes = {f" {w}"[:n].encode("utf-8") for w in DEMO_WORDS for n in range(2, len(w) + 2)}
    return [bytes([i]) for i in range(256)] + sorted(prefixes, key=lambda p: (len(p), p))


def vocab_size() -> int:
    """Total token count (control + normal), i.e. the decoder's embedding rows."""
    return N_SPECIAL + len(normal_pieces())


def word_token_id(word: str) -> int:
    """The token id of ``" " + word`` for a demo word; ValueError for any other word."""
    if word not in DEMO_WORDS:
        raise ValueError(f"{word!r} is not a demo word; expected one of: {' '.join(DEMO_WORDS)}")
    return N_SPECIAL + normal_pieces().index(f" {word}".encode())


def word_token_ids() -> dict[str, int]:
    """Every demo word mapped to its token id."""
    return {w: word_token_id(w) for w in DEMO_WORDS}


def token_text(token_id: int) -> str:
    """The text of a normal token (e.g. " zero"); '' for a control token; ValueError if out of range."""
    pieces = normal_pieces()
    if not 0 <= token_id < N_SPECIAL + len(pieces):
        last = N_SPECIAL + len(pieces) - 1
        raise ValueError(f"token id {token_id} is outside the demo vocabulary (0..{last})")
    if token_id < N_SPECIAL:
        return ""
    return pieces[token_id - N_SPECIAL].decode("utf-8", errors="replace")


def tekken_dict(transcription_delay_ms: int = 480) -> dict:
    """The tekken.json content for the demo model (same audio settings as the real model)."""
    if transcription_delay_ms % 80 or not 80 <= transcription_delay_ms <= 2400:
        got = transcription_delay_ms
        raise ValueError(f"transcription_delay_ms must be a multiple of 80 in 80..2400; got {got}")
    return tekken_json(normal_pieces(), transcription_delay_ms)


def write_tekken(path: Path, transcription_delay_ms: int = 480) -> dict:
    """Write the demo tekken.json to ``path`` (parents created) and return its content."""
    return write_json(path, tekken_dict(transcription_delay_ms))
