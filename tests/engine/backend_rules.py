"""What the GPU rule checks share (cuda_rules.py, metal_rules.py): ggml's types and layout
predicates, ported from ggml.c, read off node-dump layouts; the verdict on one node; and hand-made
nodes for their tests."""

from __future__ import annotations

import enum
from collections.abc import Callable

import gguf

from tools.compare_node_dumps import Layout, NodeRecord

Q = gguf.GGMLQuantizationType
F32, F16, BF16, I32 = int(Q.F32), int(Q.F16), int(Q.BF16), int(Q.I32)

# the device streams both checks read (family, weight type): tests/engine/conftest.py device_dumps
STREAMS = [("voxtral", "f16"), ("voxtral", "q8_0"), ("voxtral", "q4_k"), ("fc", "f16"), ("fc", "q8_0")]


class Verdict(enum.Enum):
    RUNS = enum.auto()  # on the GPU, correctly
    FALLS_BACK = enum.auto()  # supports_op says no: the scheduler runs it on the CPU
    ABORTS = enum.auto()  # supports_op says yes, then an assert or a missing kernel stops the process
    WRONG = enum.auto()  # runs and writes wrong values (a known ggml bug)


Rule = Callable[[NodeRecord], "str | None"]


def judge(r: NodeRecord, supports: Rule, aborts: Rule, wrong: Rule | None = None) -> tuple[Verdict, str]:
    """The verdict on node `r` from a backend's rules, each giving why (or None), checked in turn."""
    for rule, v in ((supports, Verdict.FALLS_BACK), (aborts, Verdict.ABORTS), (wrong, Verdict.WRONG)):
        why = rule(r) if rule else None
        if why is not None:
            return v, why
    return Verdict.RUNS, ""


def block(t: int) -> tuple[int, int]:
    """(elements per block, bytes per block) of ggml type `t`."""
    return gguf.GGML_QUANT_SIZES[Q(t)]


def contiguous_m_n(x: Layout, m: int, n: int) -> bool:
    """ggml.c's ggml_is_contiguous_m_n: dims 1..m may have any stride, dims m+1..n-1 must follow on."""
    blck, size = block(x.ggml_type)
    if x.shape[0] != blck and x.strides[0] != size:
        return False
    next_nb = size * (x.shape[0] // blck)
    for i in range(1, n):
        if i > m:
            if x.shape[i] != 1 and x.strides[i] != next_nb:
                return False
            next_nb *= x.shape[i]
        else:
            next_nb = x.shape[i] * x.strides[i]
    return True


def contiguous(x: Layout, m: int = 0) -> bool:
    """ggml_is_contiguous (m = 0), ggml_is_contiguous_1 and _2."""
    return contiguous_m_n(x, m, 4)


def contiguous_rows(x: Layout) -> bool:
    blck, size = block(x.ggml_type)
    return x.shape[0] == blck or x.strides[0] == size


def contiguous_channels(x: Layout) -> bool:
    nb = x.strides
    return nb[0] > nb[2] and nb[1] > nb[0] and nb[2] == block(x.ggml_type)[1]


def element_rows(x: Layout) -> bool:
    """nb[0] is one element: rows whole, as the product and rope kernels need."""
    return x.strides[0] == block(x.ggml_type)[1]


def is_quantized(t: int) -> bool:
    return block(t)[0] > 1


def layout(t: int, shape: tuple[int, ...], strides: tuple[int, ...] | None = None) -> Layout:
    """A ggml layout for a hand-made node; contiguous strides unless given (bytes, ggml order)."""
    shape = (*shape, *(1,) * (4 - len(shape)))
    if strides is None:
        size = {F32: 4, F16: 2, I32: 4}[t]
        strides = (size, size * shape[0], size * shape[0] * shape[1], size * shape[0] * shape[1] * shape[2])
    return Layout(t, shape, (*strides, *(strides[-1],) * (4 - len(strides))))  # type: ignore[arg-type]


def node(op: str, out: Layout, *src: Layout) -> NodeRecord:
    """A hand-made node of `op` computing `out` from sources `src`."""
    return NodeRecord(0, 0, op, "n", tuple(-1 for _ in src), tuple("s" for _ in src), src, out, None)
