"""FastConformer byte pieces: a hostile vocabulary entry marked as a byte is refused by name.

``byte_piece`` used to read ``piece[5]`` before checking the length, so a short piece that starts
``<0x`` ("<0x", "<0x4") was read past its end. A plain build cannot see such a read (the bytes sit
in the string's inline buffer), so each load runs in a child process, where an engine built with
``-D_GLIBCXX_ASSERTIONS`` (or a sanitizer) aborts on it and the test fails; a fixed engine names
the piece in a one-line ``EngineError``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from gguf import GGUFReader

from .gguf_edit import rewrite_gguf

PIECES = "tokenizer.fastconformer.pieces"
TYPES = "tokenizer.fastconformer.piece_types"
BYTE = 2  # fc_piece_type::FC_PIECE_BYTE
NORMAL = 0

CHILD = """
import sys
from captionist import engine
try:
    m = engine.Model(sys.argv[1], backend="cpu", n_threads=1)
except engine.EngineError as e:
    print("error:", e)
else:
    print("bytes:", m.token_bytes(int(sys.argv[2])).hex())
"""


def _with_piece(src: Path, dst: Path, piece: str, piece_type: int) -> tuple[Path, int]:
    """A copy of ``src`` whose first normal piece is ``piece`` of type ``piece_type``; its id."""
    fields = GGUFReader(src).fields
    pieces = list(fields[PIECES].contents())
    types = list(fields[TYPES].contents())
    victim = types.index(NORMAL)
    pieces[victim], types[victim] = piece, piece_type
    return rewrite_gguf(src, dst, set_kv={PIECES: pieces, TYPES: types}), victim


def _load_in_child(path: Path, token_id: int) -> str:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), str(token_id)], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, f"the loader crashed (status {out.returncode}): {out.stderr[-2000:]}"
    return out.stdout.strip()


@pytest.mark.parametrize("piece", ["<0x", "<0x4", "<0x4>", "<0x41", "<0", "", "<0xZZ>", "<0x41]"])
def test_a_malformed_byte_piece_is_refused_without_reading_past_it(
    parakeet_eou_tiny_gguf: Path, tmp_path: Path, piece: str
) -> None:
    path, victim = _with_piece(parakeet_eou_tiny_gguf, tmp_path / "hostile.gguf", piece, BYTE)
    assert _load_in_child(path, victim) == (
        f"error: tokenizer piece {victim} is marked as a byte but is '{piece}' (expected <0xNN>)"
    )


def test_a_well_formed_byte_piece_decodes_to_its_byte(parakeet_eou_tiny_gguf: Path, tmp_path: Path) -> None:
    path, victim = _with_piece(parakeet_eou_tiny_gguf, tmp_path / "byte.gguf", "<0x4A>", BYTE)
    assert _load_in_child(path, victim) == "bytes: 4a"
