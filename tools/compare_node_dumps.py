"""Where two backends part: compare the node dumps of the same stream run on each.

    CAPTIONIST_FLASH_ATTN=0 CAPTIONIST_DUMP_NODES=/tmp/cpu.nodes  python run.py --backend cpu
    CAPTIONIST_FLASH_ATTN=0 CAPTIONIST_DUMP_NODES=/tmp/cuda.nodes python run.py --backend cuda
    python tools/compare_node_dumps.py /tmp/cpu.nodes /tmp/cuda.nodes [--tol 0.01]

The engine writes every computed node's output when CAPTIONIST_DUMP_NODES names a file
(engine/src/node_dump.h has the format). Both runs must build the same graphs: the same model,
audio and feed sizes, and the same attention choice (CAPTIONIST_FLASH_ATTN=0, one
CAPTIONIST_KV_TYPE), since the engine picks flash attention and the cache type per backend.

The two graphs are nearly the same, not always identical: in device memory the engine adds a few
copies (contiguous attention windows, flat cache writes), forms some products differently, and a
backend may reorder independent nodes. So each compute's nodes are aligned as two sequences of
(op, shape), the longest common subsequence, and every aligned pair is scored by its largest
difference over the reference's largest magnitude. The report lists, per compute, the first nodes
over --tol; the first one whose source nodes agree (within --tol, where they were aligned) is the op
to look at: its inputs agree and its output does not.
"""

from __future__ import annotations

import argparse
import difflib
import signal
import struct
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

MAGIC = b"CNDR"


@dataclass(frozen=True)
class Layout:
    ggml_type: int
    shape: tuple[int, int, int, int]
    strides: tuple[int, int, int, int]  # bytes


@dataclass(frozen=True)
class NodeRecord:
    compute: int
    node: int
    op: str
    name: str
    sources: tuple[int, ...]  # the nodes it reads (-1: a weight, input or state tensor)
    source_names: tuple[str, ...]
    source_layouts: tuple[Layout, ...]
    layout: Layout
    values: np.ndarray | None  # float32, or None where the output was not copied

    @property
    def shape(self) -> tuple[int, int, int, int]:
        return self.layout.shape

    @property
    def ggml_type(self) -> int:
        return self.layout.ggml_type


class DumpError(ValueError):
    """The file is not a complete node dump."""


def _string(buf: memoryview, pos: int) -> tuple[str, int]:
    (n,) = struct.unpack_from("<H", buf, pos)
    pos += 2
    return bytes(buf[pos : pos + n]).decode("utf-8", "replace"), pos + n


def _layout(buf: memoryview, pos: int) -> tuple[Layout, int]:
    (ggml_type,) = struct.unpack_from("<i", buf, pos)
    shape = struct.unpack_from("<4q", buf, pos + 4)
    strides = struct.unpack_from("<4q", buf, pos + 36)
    return Layout(ggml_type, shape, strides), pos + 68


def read_dump(path: Path) -> list[NodeRecord]:
    data = memoryview(path.read_bytes())
    out: list[NodeRecord] = []
    pos = 0
    try:
        while pos < len(data):
            if bytes(data[pos : pos + 4]) != MAGIC:
                raise DumpError(f"{path}: no record at byte {pos}")
            compute, node = struct.unpack_from("<II", data, pos + 4)
            pos += 12
            op, pos = _string(data, pos)
            name, pos = _string(data, pos)
            n_src = data[pos]
            pos += 1
            sources, names, layouts = [], [], []
            for _ in range(n_src):
                (at,) = struct.unpack_from("<i", data, pos)
                s, pos = _string(data, pos + 4)
                lay, pos = _layout(data, pos)
                sources.append(at)
                names.append(s)
                layouts.append(lay)
            layout, pos = _layout(data, pos)
            has = data[pos]
            (n,) = struct.unpack_from("<Q", data, pos + 1)
            pos += 9
            if pos + 4 * n > len(data):
                raise DumpError(f"{path}: truncated values of node {name!r}")
            values = np.frombuffer(data, dtype="<f4", count=n, offset=pos).copy() if has else None
            pos += 4 * n
            out.append(
                NodeRecord(
                    compute, node, op, name, tuple(sources), tuple(names), tuple(layouts), layout, values
                )
            )
    except struct.error as exc:
        raise DumpError(f"{path}: truncated record at byte {pos}") from exc
    return out


def relative_difference(ref: np.ndarray, other: np.ndarray) -> float:
    """max |ref - other| over max |ref|; inf where either has a NaN or infinity the other lacks."""
    if ref.shape != other.shape:
        return float("inf")
    finite = np.isfinite(ref)
    if not np.array_equal(finite, np.isfinite(other)) or not np.array_equal(ref[~finite], other[~finite]):
        return float("inf")
    if not finite.any():
        return 0.0
    scale = max(float(np.abs(ref[finite]).max()), 1e-6)
    return float(np.abs(ref[finite] - other[finite]).max()) / scale


@dataclass(frozen=True)
class NodeDiff:
    record: NodeRecord
    diff: float
    sources_agree: bool  # every source node with values in both dumps is within the tolerance


@dataclass
class Comparison:
    over: dict[int, list[NodeDiff]]  # per compute, the nodes over the tolerance, in order
    unmatched: dict[int, int]  # per compute, reference nodes with no counterpart in the other dump
    matched: int  # node pairs compared


def _align(ref: list[NodeRecord], other: list[NodeRecord]) -> dict[int, NodeRecord]:
    """Reference node index -> the other dump's node of the same op and shape, in order."""
    a = [(r.op, r.shape) for r in ref]
    b = [(r.op, r.shape) for r in other]
    out: dict[int, NodeRecord] = {}
    for block in difflib.SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks():
        for k in range(block.size):
            out[ref[block.a + k].node] = other[block.b + k]
    return out


def compare(ref: list[NodeRecord], other: list[NodeRecord], tol: float) -> Comparison:
    result = Comparison({}, {}, 0)
    for c in sorted({r.compute for r in ref}):
        mine = [r for r in ref if r.compute == c]
        pairs = _align(mine, [r for r in other if r.compute == c])
        result.unmatched[c] = len(mine) - len(pairs)
        diffs: dict[int, float] = {}
        for r in mine:
            o = pairs.get(r.node)
            if o is None or r.values is None or o.values is None:
                continue
            d = relative_difference(r.values, o.values)
            diffs[r.node] = d
            result.matched += 1
            if d > tol:
                agree = all(diffs.get(s, 0.0) <= tol for s in r.sources if s >= 0)
                result.over.setdefault(c, []).append(NodeDiff(r, d, agree))
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("reference", type=Path, help="the dump to trust (usually the CPU's)")
    ap.add_argument("other", type=Path, help="the dump to check")
    ap.add_argument("--tol", type=float, default=1e-2, help="relative difference that counts (default 0.01)")
    ap.add_argument("--rows", type=int, default=8, help="nodes listed per compute")
    args = ap.parse_args(argv)
    try:
        ref, other = read_dump(args.reference), read_dump(args.other)
    except (OSError, DumpError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    computes = sorted({r.compute for r in ref})
    print(f"{args.reference}: {len(ref)} nodes; {args.other}: {len(other)} nodes; {len(computes)} computes")
    result = compare(ref, other, args.tol)
    unmatched = sum(result.unmatched.values())
    print(f"{result.matched} node pairs compared; {unmatched} reference nodes without a counterpart")
    if not result.over:
        print(f"every compared node agrees within {args.tol:g}")
        return 0
    for c in computes:
        rows = result.over.get(c, [])
        if not rows:
            continue
        n = sum(1 for r in ref if r.compute == c)
        print(f"compute {c}: {len(rows)} of {n} nodes over {args.tol:g}")
        first = next((d for d in rows if d.sources_agree), None)
        if first is not None:
            r = first.record
            print(
                f"  first with agreeing inputs: #{r.node} {r.op} '{r.name}' {list(r.shape)} "
                f"(type {r.ggml_type}) diff {first.diff:.3g}; reads {list(r.source_names)}"
            )
        for d in rows[: args.rows]:
            r = d.record
            print(
                f"  #{r.node:<5} {r.op:<14} {r.name[:40]:<40} {str(list(r.shape)):<24} {d.diff:.3g}"
                f"{'' if d.sources_agree else '  (an input already differs)'}"
            )
    return 1


if __name__ == "__main__":
    if hasattr(signal, "SIGPIPE"):  # `| head` ends the report quietly
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.exit(main())
