"""Write torch.save-format zip checkpoints and SentencePiece .model files with numpy only (no torch).

The pickle is emitted opcode by opcode, exactly as torch lays out a state dict (GLOBAL
``collections.OrderedDict``, per tensor a REDUCE of ``torch._utils._rebuild_tensor_v2`` over a
BINPERSID storage reference), so tests can also inject hostile globals.
"""

from __future__ import annotations

import io
import struct
import zipfile

import numpy as np

_STORAGE_NAMES = {
    np.dtype("<f4"): "FloatStorage",
    np.dtype("<f2"): "HalfStorage",
    np.dtype("<i8"): "LongStorage",
}


def _unicode(s: str) -> bytes:
    data = s.encode("utf-8")
    return b"X" + struct.pack("<I", len(data)) + data


def _int(i: int) -> bytes:
    return b"J" + struct.pack("<i", i)


def _global(module: str, name: str) -> bytes:
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def _tuple(items: list[bytes]) -> bytes:
    return b"(" + b"".join(items) + b"t"


def state_dict_pickle(
    entries: list[tuple[str, str, str, int, tuple[int, ...], int]], inject: bytes = b""
) -> bytes:
    """Pickle of an OrderedDict name -> tensor; entries are (name, storage type, key, numel, shape, offset).

    `inject` is raw pickle placed as one more dict value (to test hostile payloads).
    """
    out = bytearray(b"\x80\x02" + _global("collections", "OrderedDict") + b")R(")
    for name, storage, key, numel, shape, offset in entries:
        strides = [int(np.prod(shape[i + 1 :], dtype=np.int64)) for i in range(len(shape))]
        pid = _tuple(
            [_unicode("storage"), _global("torch", storage), _unicode(key), _unicode("cpu"), _int(numel)]
        )
        args = _tuple(
            [
                pid + b"Q",
                _int(offset),
                _tuple([_int(n) for n in shape]),
                _tuple([_int(s) for s in strides]),
                b"\x89",
                _global("collections", "OrderedDict") + b")R",
            ]
        )
        out += _unicode(name) + _global("torch._utils", "_rebuild_tensor_v2") + args + b"R"
    if inject:
        out += _unicode("payload") + inject
    out += b"u."
    return bytes(out)


def torch_zip_bytes(tensors: dict[str, np.ndarray], inject: bytes = b"", deflate: bool = False) -> bytes:
    """A torch.save zip of `tensors` (float32 / float16 / int64 arrays), optionally with a hostile value."""
    entries, blobs = [], {}
    for i, (name, value) in enumerate(tensors.items()):
        value = np.ascontiguousarray(value)
        entries.append((name, _STORAGE_NAMES[value.dtype], str(i), value.size, value.shape, 0))
        blobs[str(i)] = value.tobytes()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED if deflate else zipfile.ZIP_STORED) as zf:
        zf.writestr("archive/data.pkl", state_dict_pickle(entries, inject))
        zf.writestr("archive/byteorder", "little")
        for key, blob in blobs.items():
            zf.writestr(f"archive/data/{key}", blob)
        zf.writestr("archive/version", "3\n")
    return buf.getvalue()


# SentencePiece ModelProto.SentencePiece.Type
SP_NORMAL, SP_UNKNOWN, SP_CONTROL, SP_USER_DEFINED, SP_BYTE = 1, 2, 3, 4, 6


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field_bytes(field: int, data: bytes) -> bytes:
    return _varint(field << 3 | 2) + _varint(len(data)) + data


def sentencepiece_bytes(pieces: list[tuple[str, int]]) -> bytes:
    """A ModelProto with `pieces` ((text, type) in id order) plus a trainer spec the reader must skip."""
    out = bytearray()
    for i, (text, sp_type) in enumerate(pieces):
        msg = _field_bytes(1, text.encode("utf-8")) + b"\x15" + struct.pack("<f", -0.5 * i)
        if sp_type != SP_NORMAL:
            msg += b"\x18" + _varint(sp_type)
        out += _field_bytes(1, msg)
    trainer = _varint(3 << 3 | 0) + _varint(len(pieces)) + _field_bytes(7, b"unigram")
    out += _field_bytes(2, trainer)
    return bytes(out)
