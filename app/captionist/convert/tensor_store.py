"""Where checkpoint tensors come from, behind one small interface: safetensors files or a torch zip."""

from __future__ import annotations

from typing import Protocol

import numpy as np

from .safetensors_file import SafetensorsFile
from .torch_zip import TorchTensor


class TensorStore(Protocol):
    """Read-only named tensors; `load` returns a storage-dtype view (bf16 as uint16) in PyTorch shape."""

    def names(self) -> list[str]: ...

    def shape(self, name: str) -> tuple[int, ...]: ...

    def load(self, name: str) -> np.ndarray: ...


class SafetensorsStore:
    """Tensors of one or more safetensors files (a sharded checkpoint), by stored name."""

    def __init__(self, files: dict[str, SafetensorsFile]) -> None:
        self._files = files

    def names(self) -> list[str]:
        return list(self._files)

    def shape(self, name: str) -> tuple[int, ...]:
        return self._files[name].entry(name).shape

    def load(self, name: str) -> np.ndarray:
        return self._files[name].tensor(name)


class TorchStore:
    """Tensors of a ``torch.save`` zip read by ``torch_zip.read_torch_zip``."""

    def __init__(self, tensors: dict[str, TorchTensor]) -> None:
        self._tensors = tensors

    def names(self) -> list[str]:
        return list(self._tensors)

    def shape(self, name: str) -> tuple[int, ...]:
        return self._tensors[name].shape

    def load(self, name: str) -> np.ndarray:
        return self._tensors[name].array()
