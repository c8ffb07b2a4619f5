"""A SentencePiece-style vocabulary reduced to what the engine needs (``tokenizer.fastconformer.*``).

Built from a Hugging Face ``tokenizer.json`` (``hf_tokenizer.py``) or a SentencePiece ``.model``
(``sentencepiece_vocab.py``); `check_against_joint` ties it to the model's joint output size.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import ConversionError

PIECE_NORMAL = 0  # text; U+2581 is a space
PIECE_CONTROL = 1  # no text: <unk>, <pad>, <blank>, <EOU>, <EOB>, language tags, ...
PIECE_BYTE = 2  # <0xNN>: one byte of UTF-8 (byte fallback)

EOU_PIECE = "<EOU>"
EOB_PIECE = "<EOB>"
_BYTE_PIECE = re.compile(r"^<0x[0-9A-Fa-f]{2}>$")
_TAG_PIECE = re.compile(r"^<[^<>\s]+>$")


@dataclass(frozen=True)
class PieceVocab:
    """Pieces in id order with their types, and the end-of-utterance / backchannel ids (-1: absent)."""

    pieces: list[str]
    types: list[int]  # PIECE_*
    eou_id: int
    eob_id: int


def is_byte_piece(piece: str) -> bool:
    return bool(_BYTE_PIECE.match(piece))


def is_tag_piece(piece: str) -> bool:
    """``<...>`` without spaces: user-defined specials such as ``<EOU>`` or ``<en-US>`` (no text)."""
    return bool(_TAG_PIECE.match(piece))


def make_vocab(pieces: list[str], types: list[int]) -> PieceVocab:
    """PieceVocab with `<EOU>` / `<EOB>` looked up (each must occur at most once)."""
    ids: dict[str, int] = {}
    for special in (EOU_PIECE, EOB_PIECE):
        found = [i for i, p in enumerate(pieces) if p == special]
        if len(found) > 1:
            raise ConversionError(f"the tokenizer has {len(found)} {special} pieces")
        ids[special] = found[0] if found else -1
    return PieceVocab(pieces, types, ids[EOU_PIECE], ids[EOB_PIECE])


def check_against_joint(vocab: PieceVocab, n_vocab: int, blank_id: int, source: str) -> None:
    """The tokenizer must name every joint output except possibly the blank, which is then the last id."""
    n = len(vocab.pieces)
    if n == n_vocab:
        return
    if n == n_vocab - 1 and blank_id == n_vocab - 1:
        return
    raise ConversionError(
        f"{source} has {n} pieces but the joint network has {n_vocab} outputs (blank id {blank_id}); "
        f"expected {n_vocab} pieces, or {n_vocab - 1} with the blank last"
    )
