"""Read metadata values from a GGUF file's header without loading its tensors.

Usage::

    read_gguf_values(path, ("general.architecture", "fastconformer.prompt.ids"))
    # {"general.architecture": "fastconformer_rnnt", "fastconformer.prompt.ids": [0, 0, 1, ...]}

Only the key/value section at the start of the file is read (format: engine/GGUF.md, GGUF v2/v3),
so this is cheap for a file of any size. Absent keys are left out, and a file that is not a
readable GGUF gives ``{}`` (or what was read before the damage), never an exception.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from pathlib import Path
from typing import Any, BinaryIO

_SCALARS = {
    0: "<B",
    1: "<b",
    2: "<H",
    3: "<h",
    4: "<I",
    5: "<i",
    6: "<f",
    7: "<?",
    10: "<Q",
    11: "<q",
    12: "<d",
}
_STRING, _ARRAY = 8, 9
_MAX_STRING = 1 << 20
_MAX_KV = 1 << 16
_MAX_ARRAY = 1 << 22


def _read(f: BinaryIO, fmt: str) -> Any:
    size = struct.calcsize(fmt)
    data = f.read(size)
    if len(data) != size:
        raise EOFError
    return struct.unpack(fmt, data)[0]


def _string(f: BinaryIO) -> str:
    n = _read(f, "<Q")
    if n > _MAX_STRING:
        raise ValueError("string too long")
    data = f.read(n)
    if len(data) != n:
        raise EOFError
    return data.decode("utf-8", "replace")


def _value(f: BinaryIO, kind: int, keep: bool) -> Any:
    """Read (``keep``) or skip one value of GGUF type ``kind``."""
    if kind in _SCALARS:
        if keep:
            return _read(f, _SCALARS[kind])
        f.seek(struct.calcsize(_SCALARS[kind]), 1)
    elif kind == _STRING:
        if keep:
            return _string(f)
        f.seek(_read(f, "<Q"), 1)
    elif kind == _ARRAY:
        item, n = _read(f, "<I"), _read(f, "<Q")
        if n > _MAX_ARRAY:
            raise ValueError("array too long")
        if not keep and item in _SCALARS:
            f.seek(struct.calcsize(_SCALARS[item]) * n, 1)
        else:
            values = [_value(f, item, keep) for _ in range(n)]
            return values if keep else None
    else:
        raise ValueError(f"unknown GGUF value type {kind}")
    return None


def read_gguf_values(path: Path, keys: Iterable[str]) -> dict[str, Any]:
    wanted = set(keys)
    found: dict[str, Any] = {}
    try:
        with open(path, "rb") as f:
            if f.read(4) != b"GGUF" or _read(f, "<I") not in (2, 3):
                return {}
            _read(f, "<Q")  # tensor count
            for _ in range(min(_read(f, "<Q"), _MAX_KV)):
                key = _string(f)
                kind = _read(f, "<I")
                value = _value(f, kind, key in wanted)
                if key in wanted and value is not None:
                    found[key] = value
                    if len(found) == len(wanted):
                        break
    except (OSError, EOFError, ValueError, struct.error):
        pass
    return found
