"""The pieces of a Hugging Face ``tokenizer.json`` (as ``ParakeetTokenizer`` saves it).

transformers' ``ParakeetConverter`` turns the NeMo SentencePiece model into a ``BPE`` model (``vocab``:
piece -> id, ``byte_fallback``) and adds SentencePiece control / user-defined pieces and the blank as
``added_tokens`` (``special`` for control pieces and ``<blank>``). ``Unigram`` models (``vocab``: list
of ``[piece, score]``) are read too. Types: added tokens marked special, the ``unk_token`` and ``<tag>``
pieces are control; ``<0xNN>`` pieces of a byte-fallback model are bytes; the rest is normal text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .checkpoint import read_json
from .errors import ConversionError
from .piece_vocab import (
    PIECE_BYTE,
    PIECE_CONTROL,
    PIECE_NORMAL,
    PieceVocab,
    is_byte_piece,
    is_tag_piece,
    make_vocab,
)


def read_hf_tokenizer(path: Path) -> PieceVocab:
    data = read_json(path)
    model = data.get("model")
    if not isinstance(model, dict):
        raise ConversionError(f"{path.name} has no 'model' object")
    by_id: dict[int, str] = {}
    special: set[int] = set()

    def put(i: Any, piece: Any) -> None:
        if type(i) is not int or i < 0 or not isinstance(piece, str):
            raise ConversionError(f"{path.name} has a malformed token entry {piece!r} -> {i!r}")
        if by_id.get(i, piece) != piece:
            raise ConversionError(f"{path.name} gives id {i} to both {by_id[i]!r} and {piece!r}")
        by_id[i] = piece

    vocab = model.get("vocab")
    if isinstance(vocab, dict):  # BPE / WordLevel / WordPiece
        for piece, i in vocab.items():
            put(i, piece)
    elif isinstance(vocab, list):  # Unigram: [[piece, score], ...] in id order
        for i, entry in enumerate(vocab):
            if not isinstance(entry, list) or not entry:
                raise ConversionError(f"{path.name} has a malformed Unigram entry at id {i}")
            put(i, entry[0])
    else:
        raise ConversionError(f"{path.name} model {model.get('type')!r} has no vocab")
    added = data.get("added_tokens") or []
    if not isinstance(added, list):
        raise ConversionError(f"{path.name} added_tokens is not a list")
    for tok in added:
        if not isinstance(tok, dict):
            raise ConversionError(f"{path.name} has a malformed added token")
        put(tok.get("id"), tok.get("content"))
        if tok.get("special"):
            special.add(tok["id"])

    n = len(by_id)
    missing = next((i for i in range(n) if i not in by_id), None)
    if missing is not None:
        raise ConversionError(f"{path.name} has no token with id {missing} (ids must be 0..{n - 1})")
    pieces = [by_id[i] for i in range(n)]
    unk = model.get("unk_token")
    byte_fallback = bool(model.get("byte_fallback"))
    types = []
    for i, piece in enumerate(pieces):
        if i in special or piece == unk or is_tag_piece(piece) and not is_byte_piece(piece):
            types.append(PIECE_CONTROL)
        elif byte_fallback and is_byte_piece(piece):
            types.append(PIECE_BYTE)
        else:
            types.append(PIECE_NORMAL)
    return make_vocab(pieces, types)


def token_id(vocab: PieceVocab, piece: str) -> int | None:
    """Id of `piece`, or None."""
    try:
        return vocab.pieces.index(piece)
    except ValueError:
        return None
