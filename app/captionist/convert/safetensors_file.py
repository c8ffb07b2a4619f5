"""Torch-free, memory-mapped safetensors reading.

A safetensors file is an 8-byte little-endian header length, a JSON header mapping each tensor name
to ``{"dtype", "shape", "data_offsets": [begin, end]}`` (offsets relative to the end of the header),
then the raw little-endian data. Tensors are exposed as read-only ``np.memmap`` views, so nothing is
read until it is used and a checkpoint far larger than RAM can be converted tensor by tensor.

Usage::

    st = SafetensorsFile(Path("model.safetensors"))
    for name in st.names():
        f32 = to_float32(st.tensor(name))    # F32 / F16 / BF16 -> float32, one tensor at a time
"""

from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .errors import ConversionError

# safetensors dtype name -> (numpy storage dtype, bytes per element); BF16 is kept as raw uint16
_STORAGE_DTYPES: dict[str, np.dtype] = {
    "F32": np.dtype("<f4"),
    "F16": np.dtype("<f2"),
    "BF16": np.dtype("<u2"),
}

_MAX_HEADER_BYTES = 100 * 1024 * 1024


@dataclass(frozen=True)
class TensorEntry:
    """Where one tensor lives inside a safetensors file."""

    dtype: str  # "F32" | "F16" | "BF16"
    shape: tuple[int, ...]  # PyTorch order
    begin: int  # absolute file offset of the first byte
    end: int  # absolute file offset one past the last byte


class SafetensorsFile:
    """One safetensors file: validated header plus lazily memory-mapped tensor views."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._entries = _read_header(path)
        self._mmap: np.memmap | None = None

    def names(self) -> list[str]:
        return list(self._entries)

    def entry(self, name: str) -> TensorEntry:
        return self._entries[name]

    def tensor(self, name: str) -> np.ndarray:
        """Read-only view of tensor `name` in its storage dtype (BF16 as uint16), PyTorch shape."""
        e = self._entries[name]
        if e.begin == e.end:
            return np.zeros(e.shape, dtype=_STORAGE_DTYPES[e.dtype])
        if self._mmap is None:
            self._mmap = np.memmap(self.path, dtype=np.uint8, mode="r")
        raw = self._mmap[e.begin : e.end]
        return raw.view(_STORAGE_DTYPES[e.dtype]).reshape(e.shape)


def to_float32(values: np.ndarray) -> np.ndarray:
    """Storage-dtype array (float32, float16 or BF16-as-uint16) -> new float32 array."""
    if values.dtype == np.uint16:
        # bf16 is the high half of an IEEE float32
        return (values.astype(np.uint32) << 16).view(np.float32)
    return values.astype(np.float32)


def _read_header(path: Path) -> dict[str, TensorEntry]:
    try:
        file_size = path.stat().st_size
        with path.open("rb") as f:
            prefix = f.read(8)
            if len(prefix) < 8:
                raise ConversionError(f"{path.name}: not a safetensors file (shorter than 8 bytes)")
            (header_len,) = struct.unpack("<Q", prefix)
            if header_len > _MAX_HEADER_BYTES or 8 + header_len > file_size:
                raise ConversionError(
                    f"{path.name}: truncated or not a safetensors file "
                    f"(header of {header_len} bytes in a {file_size}-byte file)"
                )
            header_bytes = f.read(header_len)
    except OSError as exc:
        raise ConversionError(f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        header = json.loads(header_bytes)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConversionError(f"{path.name}: corrupt safetensors header ({exc})") from exc
    if not isinstance(header, dict):
        raise ConversionError(f"{path.name}: corrupt safetensors header (not a JSON object)")

    data_start = 8 + header_len
    entries: dict[str, TensorEntry] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        entries[name] = _parse_entry(path, name, info, data_start, file_size)
    _check_layout(path, entries, data_start, file_size)
    return entries


def _integers(value: object, what: str, path: Path, name: str) -> tuple[int, ...]:
    """A JSON list of non-negative integers (no floats, no booleans, no strings)."""

    def ok(v: object) -> bool:
        return isinstance(v, int) and not isinstance(v, bool) and v >= 0

    if not isinstance(value, list) or not all(ok(v) for v in value):
        raise ConversionError(
            f"{path.name}: tensor {name!r} has {what} {value!r}; expected a list of non-negative integers"
        )
    return tuple(value)


def _parse_entry(path: Path, name: str, info: object, data_start: int, file_size: int) -> TensorEntry:
    if not isinstance(info, dict) or not {"dtype", "shape", "data_offsets"} <= info.keys():
        raise ConversionError(f"{path.name}: corrupt safetensors header entry for {name!r}")
    dtype = info["dtype"]
    shape = _integers(info["shape"], "shape", path, name)
    offsets = _integers(info["data_offsets"], "data_offsets", path, name)
    if len(offsets) != 2:
        raise ConversionError(
            f"{path.name}: tensor {name!r} has data_offsets {list(offsets)}; expected [begin, end]"
        )
    begin, end = offsets
    if not isinstance(dtype, str) or dtype not in _STORAGE_DTYPES:
        raise ConversionError(
            f"{path.name}: tensor {name!r} has dtype {dtype}; only F32, F16 and BF16 are supported"
        )
    if end - begin != math.prod(shape) * _STORAGE_DTYPES[dtype].itemsize:
        raise ConversionError(f"{path.name}: tensor {name!r} has data offsets that do not match its shape")
    if data_start + end > file_size:
        raise ConversionError(
            f"{path.name} is truncated: tensor {name!r} ends at byte {data_start + end} "
            f"but the file has {file_size} bytes"
        )
    return TensorEntry(dtype=dtype, shape=shape, begin=data_start + begin, end=data_start + end)


def _check_layout(path: Path, entries: dict[str, TensorEntry], data_start: int, file_size: int) -> None:
    """The format's rule: the tensors tile the data area in order, no overlap and no hole."""
    at = data_start
    for name, e in sorted(entries.items(), key=lambda kv: (kv[1].begin, kv[1].end)):
        if e.begin != at:
            what = "overlaps the tensor before it" if e.begin < at else "leaves a gap before it"
            raise ConversionError(
                f"{path.name}: tensor {name!r} starts at data offset {e.begin - data_start} and {what} "
                f"(expected {at - data_start})"
            )
        at = e.end
    if at != file_size:
        raise ConversionError(
            f"{path.name}: {file_size - at} bytes after the last tensor (corrupt or shifted data offsets)"
        )
