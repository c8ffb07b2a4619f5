"""The pieces of a SentencePiece ``.model`` file, read with a small protobuf wire-format reader.

A ``.model`` is a serialized ``sentencepiece.ModelProto``; only field 1 (``repeated SentencePiece
pieces``) matters here, and in each piece field 1 (``string piece``), 2 (``float score``) and 3 (``Type
type``, default NORMAL). Everything else (trainer and normalizer specs) is skipped by wire type. Own
reader rather than the ``sentencepiece`` package: three fields do not justify a native dependency in the
app and its installers, and a malformed file gives one clear error instead of a C++ exception.

Piece types map to the engine's: NORMAL -> normal, BYTE -> byte, UNKNOWN / CONTROL / UNUSED -> control,
USER_DEFINED -> control when it is a ``<tag>`` (``<EOU>``, ``<EOB>``, language tags), else normal (its
text is emitted literally, as SentencePiece decodes it).
"""

from __future__ import annotations

from pathlib import Path

from .errors import ConversionError
from .piece_vocab import PIECE_BYTE, PIECE_CONTROL, PIECE_NORMAL, PieceVocab, is_tag_piece, make_vocab

# sentencepiece_model.proto ModelProto.SentencePiece.Type
SP_NORMAL, SP_UNKNOWN, SP_CONTROL, SP_USER_DEFINED, SP_UNUSED, SP_BYTE = 1, 2, 3, 4, 5, 6
_MAX_BYTES = 64 * 1024 * 1024


class _Truncated(Exception):
    pass


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise _Truncated
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def iter_fields(data: bytes):  # noqa: ANN201 - generator of (field, wire type, value)
    """(field number, wire type, value) of each field; value is an int (varint / fixed) or bytes."""
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 1:
            value, pos = int.from_bytes(data[pos : pos + 8], "little"), pos + 8
        elif wire == 2:
            n, pos = _varint(data, pos)
            value, pos = data[pos : pos + n], pos + n
        elif wire == 5:
            value, pos = data[pos : pos + 4], pos + 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
        if pos > len(data):
            raise _Truncated
        yield field, wire, value


def _engine_type(sp_type: int, piece: str) -> int:
    if sp_type == SP_BYTE:
        return PIECE_BYTE
    if sp_type in (SP_UNKNOWN, SP_CONTROL, SP_UNUSED):
        return PIECE_CONTROL
    if sp_type == SP_USER_DEFINED and is_tag_piece(piece):
        return PIECE_CONTROL
    if sp_type in (SP_NORMAL, SP_USER_DEFINED):
        return PIECE_NORMAL
    raise ValueError(f"piece {piece!r} has unknown type {sp_type}")


def parse_sentencepiece(data: bytes, source: str) -> PieceVocab:
    """PieceVocab of a serialized ModelProto (`source` names the file in errors)."""
    pieces: list[str] = []
    types: list[int] = []
    try:
        for field, wire, value in iter_fields(data):
            if field != 1 or wire != 2:
                continue
            text, sp_type = None, SP_NORMAL
            for sub, sub_wire, sub_value in iter_fields(value):
                if sub == 1 and sub_wire == 2:
                    text = sub_value.decode("utf-8")
                elif sub == 3 and sub_wire == 0:
                    sp_type = sub_value
            if text is None:
                raise ValueError(f"piece {len(pieces)} has no text")
            pieces.append(text)
            types.append(_engine_type(sp_type, text))
    except _Truncated:
        raise ConversionError(f"{source} is truncated or not a SentencePiece model") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ConversionError(f"{source} is not a valid SentencePiece model ({exc})") from None
    if not pieces:
        raise ConversionError(f"{source} holds no SentencePiece pieces")
    return make_vocab(pieces, types)


def read_sentencepiece(path: Path) -> PieceVocab:
    try:
        if path.stat().st_size > _MAX_BYTES:
            raise ConversionError(f"{path.name} is implausibly large for a SentencePiece model")
        data = path.read_bytes()
    except OSError as exc:
        raise ConversionError(f"cannot read {path}: {exc.strerror or exc}") from exc
    return parse_sentencepiece(data, path.name)
