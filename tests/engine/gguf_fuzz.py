"""Seeded mutations of a GGUF file, and the child process that loads them (tests/engine/test_fuzz_loader.py).

A case is (seed, index): the same pair always gives the same bytes. Mutations hit the header, a
metadata value (integers and floats set to boundary values, string and array lengths), a tensor's
shape, type or offset, random bytes of the metadata area, or truncate the file.

Child usage: ``python gguf_fuzz.py FILE SEED FIRST COUNT`` prints ``case N`` before and ``ok N`` /
``error N`` after each case and exits 0; any other exception exits 1 naming the case, a crash or hang
leaves ``case N`` as the last line.
"""

from __future__ import annotations

import struct
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from gguf import GGUFReader, GGUFValueType

INTS = [
    0,
    1,
    2,
    3,
    7,
    8,
    15,
    16,
    31,
    32,
    255,
    256,
    4096,
    32000,
    65535,
    65536,
    1 << 20,
    20_000_000,
    1 << 29,
    (1 << 31) - 1,
    1 << 31,
    (1 << 32) - 1,
]
FLOATS = [
    0.0,
    -0.0,
    -1.0,
    1.0,
    1e-30,
    -1e-5,
    0.5,
    1e10,
    3.4e38,
    -3.4e38,
    float("nan"),
    float("inf"),
    float("-inf"),
]
_PACK = {
    GGUFValueType.UINT8: "<B",
    GGUFValueType.INT8: "<b",
    GGUFValueType.UINT16: "<H",
    GGUFValueType.INT16: "<h",
    GGUFValueType.UINT32: "<I",
    GGUFValueType.INT32: "<i",
    GGUFValueType.UINT64: "<Q",
    GGUFValueType.INT64: "<q",
    GGUFValueType.FLOAT32: "<f",
    GGUFValueType.FLOAT64: "<d",
    GGUFValueType.BOOL: "<B",
}


@dataclass(frozen=True)
class Slot:
    """A place in the file a mutation may rewrite: byte offset, struct format, what it is."""

    offset: int
    fmt: str
    what: str


def _slots(path: Path) -> tuple[list[Slot], int]:
    """Every numeric metadata value, string/array length and tensor-info number; and the data offset."""
    r = GGUFReader(path)
    base = r.data.__array_interface__["data"][0]

    def at(part: np.ndarray) -> int:
        return int(part.__array_interface__["data"][0] - base)

    slots: list[Slot] = []
    for name, f in r.fields.items():
        kind = f.types[0] if f.types else None
        if kind is None:
            continue
        if kind == GGUFValueType.ARRAY:
            slots.append(Slot(at(f.parts[4]), "<Q", f"{name} length"))
            sub = f.types[-1]
            if sub in _PACK and f.data:
                for i in f.data[:: max(1, len(f.data) // 4)][:4]:
                    slots.append(Slot(at(f.parts[i]), _PACK[sub], f"{name}[{i}]"))
        elif kind == GGUFValueType.STRING:
            slots.append(Slot(at(f.parts[3]), "<Q", f"{name} length"))
        elif kind in _PACK:
            slots.append(Slot(at(f.parts[f.data[0]]), _PACK[kind], name))
    for t in r.tensors:
        parts = t.field.parts  # name length, name, n_dims, dims, type, offset
        slots.append(Slot(at(parts[2]), "<I", f"{t.name} n_dims"))
        for d in range(len(parts[3])):
            slots.append(Slot(at(parts[3]) + 8 * d, "<Q", f"{t.name} ne[{d}]"))
        slots.append(Slot(at(parts[4]), "<I", f"{t.name} type"))
        slots.append(Slot(at(parts[5]), "<Q", f"{t.name} offset"))
    return slots, int(r.data_offset)


class Mutator:
    """Mutations of one fixture file; ``case(seed, i)`` -> (bytes, description)."""

    def __init__(self, path: Path) -> None:
        self.data = path.read_bytes()
        self.slots, self.data_offset = _slots(path)

    def case(self, seed: int, i: int) -> tuple[bytes, str]:
        rng = np.random.default_rng([seed, i])
        buf = bytearray(self.data)
        kind = int(rng.integers(6))
        if kind == 0:  # header: magic, version, tensor and key counts
            pos = int(rng.integers(24))
            buf[pos] = int(rng.integers(256))
            return bytes(buf), f"header byte {pos} = {buf[pos]}"
        if kind == 5:  # truncation anywhere
            n = int(rng.integers(len(buf)))
            return bytes(buf[:n]), f"truncated to {n} bytes"
        if kind == 4:  # random bytes in the metadata and tensor-info area
            what = []
            for _ in range(int(rng.integers(1, 5))):
                pos = int(rng.integers(24, self.data_offset))
                buf[pos] = int(rng.integers(256))
                what.append(f"{pos}={buf[pos]}")
            return bytes(buf), "bytes " + ", ".join(what)
        slot = self.slots[int(rng.integers(len(self.slots)))]
        size = struct.calcsize(slot.fmt)
        if slot.fmt in ("<f", "<d"):
            value: float | int = FLOATS[int(rng.integers(len(FLOATS)))]
        else:
            value = INTS[int(rng.integers(len(INTS)))] if rng.integers(4) else int(rng.integers(1 << 16))
            if slot.fmt == "<B" or slot.fmt == "<b":
                value &= 0x7F
            elif slot.fmt in ("<H", "<h"):
                value &= 0x7FFF
            elif slot.fmt == "<i":
                value = value - (1 << 32) if value >= 1 << 31 else value
            elif slot.fmt == "<q":
                value = int(value)
        buf[slot.offset : slot.offset + size] = struct.pack(slot.fmt, value)
        return bytes(buf), f"{slot.what} = {value}"


def run_cases(path: Path, seed: int, first: int, count: int) -> int:
    from captionist import engine

    mutator = Mutator(path)
    pcm = (np.random.default_rng(0).standard_normal(1600) * 0.01).astype(np.float32)
    with tempfile.TemporaryDirectory(dir="/dev/shm" if Path("/dev/shm").is_dir() else None) as tmp:
        target = Path(tmp) / "case.gguf"
        for i in range(first, first + count):
            data, what = mutator.case(seed, i)
            print(f"case {i} {what}", flush=True)
            target.write_bytes(data)
            try:
                m = engine.Model(target, backend="cpu", n_threads=1)
                s = m.stream()
                s.feed(pcm)
                s.finish()
            except engine.EngineError:
                print(f"error {i}", flush=True)
                continue
            except Exception as exc:  # noqa: BLE001 - anything but EngineError is the failure we look for
                print(f"FAILED {i} ({what}): {type(exc).__name__}: {exc}", flush=True)
                return 1
            print(f"ok {i}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(run_cases(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])))
