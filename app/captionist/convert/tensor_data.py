"""Turn one checkpoint tensor into its GGUF storage array, a bounded number of rows at a time."""

from __future__ import annotations

import numpy as np
from gguf import GGMLQuantizationType

from .safetensors_file import to_float32

OUTTYPES = ("f32", "f16", "bf16")
_CHUNK_BYTES = 64 * 1024 * 1024  # float32 working set per chunk


def storage_type(outtype: str) -> tuple[np.dtype, GGMLQuantizationType]:
    """numpy storage dtype and GGML type for an outtype (bf16 is stored as uint16 bit patterns)."""
    if outtype == "f32":
        return np.dtype(np.float32), GGMLQuantizationType.F32
    if outtype == "f16":
        return np.dtype(np.float16), GGMLQuantizationType.F16
    return np.dtype(np.uint16), GGMLQuantizationType.BF16


def encode(values: np.ndarray, outtype: str) -> np.ndarray:
    """float32 array -> storage array of `outtype` (bf16: round to nearest even, NaN kept quiet)."""
    if outtype == "f32":
        return values
    if outtype == "f16":
        return values.astype(np.float16)
    bits = values.view(np.uint32)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(values), np.uint16(0x7FC0), rounded)


def convert_rows(source: np.ndarray, outtype: str, row_order: np.ndarray | None = None) -> np.ndarray:
    """New array of `source` (storage dtype, any rank) in `outtype`, rows optionally reordered.

    Works through at most ~64 MiB of float32 at once, so peak memory is the output plus one chunk.
    """
    dtype, _ = storage_type(outtype)
    out = np.empty(source.shape, dtype=dtype)
    n_rows = source.shape[0] if source.ndim else 1
    if source.ndim == 0:
        out[...] = encode(to_float32(np.asarray(source)), outtype)
        return out
    row_elems = max(1, int(np.prod(source.shape[1:], dtype=np.int64)))
    step = max(1, _CHUNK_BYTES // (4 * row_elems))
    for r0 in range(0, n_rows, step):
        r1 = min(n_rows, r0 + step)
        rows = source[r0:r1] if row_order is None else source[row_order[r0:r1]]
        out[r0:r1] = encode(to_float32(rows), outtype)
    return out


def arrays_equal(a: np.ndarray, b: np.ndarray) -> bool:
    """Exact equality of two same-shape storage arrays, compared chunk by chunk after float32 decode."""
    if a.shape != b.shape:
        return False
    if a.ndim == 0:
        return bool(np.array_equal(to_float32(np.asarray(a)), to_float32(np.asarray(b))))
    row_elems = max(1, int(np.prod(a.shape[1:], dtype=np.int64)))
    step = max(1, _CHUNK_BYTES // (4 * row_elems))
    for r0 in range(0, a.shape[0], step):
        if not np.array_equal(to_float32(a[r0 : r0 + step]), to_float32(b[r0 : r0 + step])):
            return False
    return True
