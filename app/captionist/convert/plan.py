"""What one conversion writes: the architecture, its metadata and every output tensor, in file order.

Each architecture's planner (``voxtral.py``, ``fastconformer_hf.py``, ``fastconformer_nemo.py``) builds a
`ConversionPlan`; ``converter.py`` writes any plan the same way (streamed, temp file + rename).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from gguf import GGUFWriter, LlamaFileType

_FILE_TYPES = {
    "f32": LlamaFileType.ALL_F32,
    "f16": LlamaFileType.MOSTLY_F16,
    "bf16": LlamaFileType.MOSTLY_BF16,
}


def file_type(outtype: str) -> int:
    """``general.file_type`` hint for an outtype (informational only)."""
    return int(_FILE_TYPES[outtype])


@dataclass(frozen=True)
class OutTensor:
    """One tensor of the output file.

    `load` returns the values in a storage dtype the converter understands (float32, float16, float64 or
    bf16 bit patterns as uint16) with exactly `shape` (numpy order, the reverse of ggml order); it is
    called once, while writing, so a memory-mapped view costs nothing until then.
    """

    name: str  # GGUF tensor name
    shape: tuple[int, ...]  # numpy order
    outtype: str  # "f32" | "f16" | "bf16"
    load: Callable[[], np.ndarray]
    row_order: np.ndarray | None = None  # optional row permutation applied while converting


def _no_cleanup() -> None:
    return None


@dataclass
class ConversionPlan:
    """Everything needed to write one GGUF file; `close` releases temporary files (called once, always)."""

    arch: str  # general.architecture
    add_metadata: Callable[[GGUFWriter], None]  # adds every key except general.architecture
    tensors: list[OutTensor]
    close: Callable[[], None] = field(default=_no_cleanup)
