"""Read a GGUF back into plain Python values for comparisons."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from gguf import GGMLQuantizationType, GGUFReader


@dataclass
class GgufContents:
    meta: dict[str, object]  # key -> scalar, str or list
    tensors: dict[str, np.ndarray]  # name -> data in numpy (PyTorch) order, storage dtype
    types: dict[str, GGMLQuantizationType]
    ggml_shapes: dict[str, list[int]]

    def f32(self, name: str) -> np.ndarray:
        """Tensor decoded to float32 (F32, F16 or BF16 storage)."""
        data = self.tensors[name]
        if self.types[name] == GGMLQuantizationType.BF16:
            return (data.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
        return data.astype(np.float32)

    def token(self, i: int) -> bytes:
        offsets = self.meta["tokenizer.tekken.token_offsets"]
        return bytes(self.meta["tokenizer.tekken.token_bytes"][offsets[i] : offsets[i + 1]])  # type: ignore[index]


def read_gguf(path: Path) -> GgufContents:
    reader = GGUFReader(path)
    meta = {k: f.contents() for k, f in reader.fields.items() if not k.startswith("GGUF.")}
    tensors, types, shapes = {}, {}, {}
    for t in reader.tensors:
        ggml_shape = [int(x) for x in t.shape]
        data = np.array(t.data)
        if t.tensor_type == GGMLQuantizationType.BF16:
            data = data.view(np.uint16)
        tensors[t.name] = data.reshape(ggml_shape[::-1])
        types[t.name] = GGMLQuantizationType(t.tensor_type)
        shapes[t.name] = ggml_shape
    return GgufContents(meta, tensors, types, shapes)
