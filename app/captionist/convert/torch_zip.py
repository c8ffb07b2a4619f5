"""Torch-free, safe reading of a ``torch.save`` checkpoint (the zip format torch has written since 1.6).

The archive holds ``<prefix>/data.pkl`` (a pickle of the state dict whose tensors refer to storages by
persistent id) and one raw little-endian record ``<prefix>/data/<key>`` per storage. The pickle is read
with an unpickler that resolves only the handful of globals tensor state dicts use
(``collections.OrderedDict``, ``torch._utils._rebuild_tensor_v2`` / ``_rebuild_parameter`` and the
``torch.*Storage`` types), each to a harmless stand-in of this module; anything else (``os.system``,
``builtins.eval``, any class) stops the read with a ConversionError, so a hostile file never runs code.
Tensors come back as read-only numpy views of the (memory-mapped) records.

Usage::

    tensors = read_torch_zip(Path("model.nemo"), offset, size, "model_weights.ckpt")  # a member of a tar
    w = tensors["encoder.pre_encode.out.weight"].array()   # float32 / float16 / bf16-as-uint16 view
"""

from __future__ import annotations

import collections
import io
import pickle
import struct
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from .errors import ConversionError

_MAX_PICKLE_BYTES = 256 * 1024 * 1024

# torch storage type -> (safetensors-style dtype name, numpy storage dtype); BF16 is kept as raw uint16
_STORAGES = {
    "FloatStorage": ("F32", "<f4"),
    "HalfStorage": ("F16", "<f2"),
    "BFloat16Storage": ("BF16", "<u2"),
    "DoubleStorage": ("F64", "<f8"),
    "LongStorage": ("I64", "<i8"),
    "IntStorage": ("I32", "<i4"),
    "ShortStorage": ("I16", "<i2"),
    "CharStorage": ("I8", "i1"),
    "ByteStorage": ("U8", "u1"),
    "BoolStorage": ("BOOL", "?"),
}
FLOAT_DTYPES = ("F32", "F16", "BF16", "F64")


class _BadPickle(Exception):
    """The pickle is not a plain tensor state dict (message says why)."""


class _Inert:
    """Base of every object the unpickler can create: pickle's BUILD opcode cannot alter it."""

    __slots__ = ()

    def __setstate__(self, state: object) -> None:
        raise _BadPickle("the pickle tries to set the state of a tensor-rebuild object")


class _StorageType(_Inert):
    __slots__ = ("dtype", "np_dtype")

    def __init__(self, dtype: str, np_dtype: str) -> None:
        self.dtype, self.np_dtype = dtype, np.dtype(np_dtype)


class _StorageRef(_Inert):
    __slots__ = ("kind", "key", "numel")

    def __init__(self, kind: _StorageType, key: str, numel: int) -> None:
        self.kind, self.key, self.numel = kind, key, numel


class _Function(_Inert):
    """One allowed global: calls a validating rebuild function of this module."""

    __slots__ = ("_fn",)

    def __init__(self, fn: Any) -> None:
        self._fn = fn

    def __call__(self, *args: Any) -> Any:
        return self._fn(*args)


class _StateDict(collections.OrderedDict):
    """``collections.OrderedDict`` as pickled by torch: its ``_metadata`` state is accepted and dropped."""

    def __setstate__(self, state: object) -> None:
        return None


class TorchTensor(_Inert):
    """One tensor of the checkpoint: dtype name, PyTorch shape, and a lazy view of its data."""

    __slots__ = ("dtype", "shape", "_storage", "_offset", "_stride", "_reader")

    def __init__(self, storage: _StorageRef, offset: int, shape: tuple[int, ...], stride: tuple[int, ...]):
        self.dtype, self.shape = storage.kind.dtype, shape
        self._storage, self._offset, self._stride = storage, offset, stride
        self._reader: _Records | None = None

    def array(self) -> np.ndarray:
        """Read-only view in the storage dtype (float32 / float16 / float64 / bf16 bits as uint16)."""
        if self.dtype not in FLOAT_DTYPES:
            raise ConversionError(f"tensor of dtype {self.dtype} cannot be converted (only float tensors)")
        assert self._reader is not None
        base = self._reader.storage(self._storage)
        item = base.itemsize
        view = np.lib.stride_tricks.as_strided(
            base[self._offset :], self.shape, tuple(s * item for s in self._stride), writeable=False
        )
        return view


def _ints(value: Any, what: str) -> tuple[int, ...]:
    if not isinstance(value, tuple) or not all(type(v) is int and v >= 0 for v in value):
        raise _BadPickle(f"tensor {what} is not a tuple of non-negative integers")
    return value


def _rebuild_tensor_v2(storage: Any, offset: Any, size: Any, stride: Any, *rest: Any) -> TorchTensor:
    if not isinstance(storage, _StorageRef) or type(offset) is not int or offset < 0:
        raise _BadPickle("malformed tensor record")
    shape, strides = _ints(size, "size"), _ints(stride, "stride")
    if len(shape) != len(strides):
        raise _BadPickle("tensor size and stride differ in length")
    if all(shape):
        last = offset + sum((n - 1) * s for n, s in zip(shape, strides, strict=True))
        if last >= storage.numel:
            raise _BadPickle(f"tensor reaches element {last} of a {storage.numel}-element storage")
    return TorchTensor(storage, offset, shape, strides)


def _rebuild_parameter(data: Any, *rest: Any) -> TorchTensor:
    if not isinstance(data, TorchTensor):
        raise _BadPickle("a parameter that does not wrap a tensor")
    return data


def _ordered_dict(*args: Any) -> _StateDict:
    return _StateDict(*args)


_ALLOWED: dict[str, _Inert] = {
    "collections.OrderedDict": _Function(_ordered_dict),
    "torch._utils._rebuild_tensor_v2": _Function(_rebuild_tensor_v2),
    "torch._utils._rebuild_parameter": _Function(_rebuild_parameter),
    "torch._utils._rebuild_parameter_with_state": _Function(_rebuild_parameter),
    **{f"torch.{name}": _StorageType(*spec) for name, spec in _STORAGES.items()},
}


class _Unpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        found = _ALLOWED.get(f"{module}.{name}")
        if found is None:
            raise _BadPickle(f"its pickle refers to {module}.{name}, which is not tensor data")
        return found

    def persistent_load(self, pid: Any) -> _StorageRef:
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise _BadPickle("unknown persistent id in the pickle")
        _, kind, key, _location, numel = pid
        if not isinstance(kind, _StorageType) or not isinstance(key, str) or type(numel) is not int:
            raise _BadPickle("malformed storage reference in the pickle")
        return _StorageRef(kind, key, numel)


class _Window(io.RawIOBase):
    """Read-only file view of bytes [start, start + size) of an open file (a tar member, say)."""

    def __init__(self, f: io.BufferedReader, start: int, size: int) -> None:
        self._f, self._start, self._size, self._pos = f, start, size, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, pos: int, whence: int = 0) -> int:
        self._pos = {0: pos, 1: self._pos + pos, 2: self._size + pos}[whence]
        return self._pos

    def readinto(self, buf: Any) -> int:
        n = max(0, min(len(buf), self._size - self._pos))
        self._f.seek(self._start + self._pos)
        data = self._f.read(n)
        buf[: len(data)] = data
        self._pos += len(data)
        return len(data)


class _Records:
    """Where each storage record lies: a byte range of the file (stored) or bytes in memory (deflated)."""

    def __init__(self, path: Path, start: int, zf: zipfile.ZipFile, members: dict[str, zipfile.ZipInfo]):
        self._path = path
        self._where: dict[str, tuple[int, int] | bytes] = {}
        for key, info in members.items():
            if info.compress_type == zipfile.ZIP_STORED:
                self._where[key] = (start + _data_offset(zf, info), info.file_size)
            else:
                self._where[key] = zf.read(info)
        self._map: np.memmap | None = None

    def storage(self, ref: _StorageRef) -> np.ndarray:
        where = self._where.get(ref.key)
        if where is None:
            raise ConversionError(f"{self._path.name}: storage record {ref.key!r} is missing")
        nbytes = ref.numel * ref.kind.np_dtype.itemsize
        if isinstance(where, bytes):
            raw = np.frombuffer(where, dtype=np.uint8)
        else:
            begin, size = where
            if self._map is None:
                self._map = np.memmap(self._path, dtype=np.uint8, mode="r")
            raw = self._map[begin : begin + size]
        if raw.size < nbytes:
            raise ConversionError(f"{self._path.name} is truncated: storage record {ref.key!r} is too short")
        return raw[:nbytes].view(ref.kind.np_dtype)


def _data_offset(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> int:
    """Offset of a stored member's data inside the zip: after its local header (whose extra may differ)."""
    fp = zf.fp
    assert fp is not None
    fp.seek(info.header_offset)
    header = fp.read(30)
    if len(header) < 30 or header[:4] != b"PK\x03\x04":
        raise ConversionError("corrupt zip local header")
    name_len, extra_len = struct.unpack("<HH", header[26:30])
    return info.header_offset + 30 + name_len + extra_len


def read_torch_zip(
    path: Path, offset: int = 0, size: int | None = None, display: str = ""
) -> dict[str, TorchTensor]:
    """Tensors of the ``torch.save`` zip stored at bytes [offset, offset + size) of `path`, by name."""
    display = display or path.name
    try:
        f = path.open("rb")
    except OSError as exc:
        raise ConversionError(f"cannot read {path}: {exc.strerror or exc}") from exc
    size = path.stat().st_size - offset if size is None else size
    try:
        zf = zipfile.ZipFile(io.BufferedReader(_Window(f, offset, size)))
        pickles = [n for n in zf.namelist() if n.endswith("data.pkl") and n.count("/") == 1]
        if len(pickles) != 1:
            raise ConversionError(f"{display} is not a torch checkpoint (no single <name>/data.pkl)")
        prefix = pickles[0][: -len("data.pkl")]
        byteorder = prefix + "byteorder"
        if byteorder in zf.namelist() and zf.read(byteorder).strip() not in (b"", b"little"):
            raise ConversionError(f"{display} stores big-endian tensors, which are not supported")
        info = zf.getinfo(pickles[0])
        if info.file_size > _MAX_PICKLE_BYTES:
            raise ConversionError(f"{display}: its pickle is implausibly large ({info.file_size} bytes)")
        root = _Unpickler(io.BytesIO(zf.read(info))).load()
        data = prefix + "data/"
        members = {n[len(data) :]: zf.getinfo(n) for n in zf.namelist() if n.startswith(data)}
        records = _Records(path, offset, zf, members)
    except _BadPickle as exc:
        raise ConversionError(f"{display}: refusing to load it: {exc} (the file may be malicious)") from None
    except (
        zipfile.BadZipFile,
        zipfile.LargeZipFile,
        pickle.UnpicklingError,
        EOFError,
        ValueError,
        TypeError,
        AttributeError,
        IndexError,
        KeyError,
        RecursionError,
        struct.error,
    ) as exc:
        raise ConversionError(f"{display} is not a readable torch checkpoint ({exc})") from None
    except OSError as exc:
        raise ConversionError(f"cannot read {display}: {exc.strerror or exc}") from exc
    finally:
        f.close()
    if isinstance(root, dict) and isinstance(root.get("state_dict"), dict):
        root = root["state_dict"]
    if not isinstance(root, dict):
        raise ConversionError(f"{display} does not hold a state dict")
    tensors: dict[str, TorchTensor] = {}
    for name, value in root.items():
        if isinstance(name, str) and isinstance(value, TorchTensor):
            value._reader = records
            tensors[name] = value
    return tensors
