"""ggml's CUDA rules (cuda_rules.py) on hand-made nodes, and on every node of both families' streams
as the engine builds them for device memory with its own settings (flash attention and the cache
type it picks per backend; F16 and quantized weights): no node that CUDA would abort on or get wrong,
and none it would leave to the CPU, beyond the tiny models' narrow depthwise convolution."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import pytest

from tools.compare_node_dumps import NodeRecord

from .backend_rules import F16, F32, STREAMS, Verdict, layout, node
from .conftest import DEVICE_PARAMS
from .cuda_rules import verdict

Q8_0, Q4_K = 8, 12


def test_a_unary_op_on_half_the_rows_falls_back() -> None:
    """The gate the first CUDA run found: a sigmoid on a view of every row's second half."""
    half = layout(F32, (64, 14), (4, 512))
    assert verdict(node("SIGMOID", layout(F32, (64, 14)), half))[0] is Verdict.FALLS_BACK
    assert verdict(node("SIGMOID", layout(F32, (64, 14)), layout(F32, (64, 14))))[0] is Verdict.RUNS
    assert verdict(node("MUL", layout(F32, (64, 14)), half, layout(F32, (64, 14))))[0] is Verdict.RUNS


def test_ssm_conv_widths() -> None:
    out = layout(F32, (512, 4))
    widths = {9: Verdict.RUNS, 15: Verdict.RUNS, 7: Verdict.ABORTS, 31: Verdict.ABORTS}
    for k, expect in widths.items():
        r = node("SSM_CONV", out, layout(F32, (k - 1 + 4, 512)), layout(F32, (k, 512)))
        assert verdict(r)[0] is expect, k
    narrow = node("SSM_CONV", layout(F32, (64, 4)), layout(F32, (12, 64)), layout(F32, (9, 64)))
    assert verdict(narrow)[0] is Verdict.FALLS_BACK


def test_depthwise_2d_layouts() -> None:
    kern = layout(F32, (3, 3, 1, 16))
    whcn = layout(F32, (65, 59, 16))
    cwhn = layout(F32, (65, 59, 16), (64, 4160, 4, 245440))
    odd = layout(F32, (65, 59, 16), (4, 520, 65 * 59 * 8, 0))  # every other plane: neither layout
    out = layout(F32, (33, 29, 16))
    assert verdict(node("CONV_2D_DW", out, kern, whcn))[0] is Verdict.RUNS
    assert verdict(node("CONV_2D_DW", out, kern, cwhn))[0] is Verdict.RUNS
    assert verdict(node("CONV_2D_DW", out, kern, odd))[0] is Verdict.ABORTS
    f16_kernel = layout(F16, (3, 3, 1, 16))
    assert verdict(node("CONV_2D_DW", out, f16_kernel, whcn))[0] is Verdict.FALLS_BACK


def test_products_and_copies() -> None:
    w = layout(Q8_0, (64, 32), (34, 68, 68 * 32, 68 * 32))
    x = layout(F32, (64, 4))
    assert verdict(node("MUL_MAT", layout(F32, (32, 4)), w, x))[0] is Verdict.RUNS
    f16_x = layout(F16, (64, 4))
    assert verdict(node("MUL_MAT", layout(F32, (32, 4)), w, f16_x))[0] is Verdict.FALLS_BACK
    column_view = layout(F32, (64, 4), (256, 4))  # rows of a transposed view
    assert verdict(node("MUL_MAT", layout(F32, (32, 4)), layout(F32, (64, 32)), column_view))[0] is (
        Verdict.FALLS_BACK
    )
    # a value cache written through its columns (ggml-org/ggml#1497), and the flat copy that replaced it
    values = layout(F32, (1, 16, 8), (4, 4, 64))
    cache_cols = layout(F32, (1, 16, 8), (4, 1024, 16384))
    assert verdict(node("CPY", cache_cols, values, cache_cols))[0] is Verdict.WRONG
    flat = layout(F32, (128,))
    flat_dst = layout(F32, (128,), (4, 512))
    assert verdict(node("CPY", flat_dst, flat, flat_dst))[0] is Verdict.RUNS
    assert verdict(node("CPY", layout(Q4_K, (256,), (144,)), flat, layout(Q4_K, (256,), (144,))))[0] is (
        Verdict.FALLS_BACK
    )


def test_an_op_the_rules_do_not_know_is_reported() -> None:
    r = node("RWKV_WKV7", layout(F32, (4,)), layout(F32, (4,)))
    v, why = verdict(r)
    assert v is Verdict.FALLS_BACK and "not an op this check knows" in why


@pytest.mark.parametrize("device", DEVICE_PARAMS)
@pytest.mark.parametrize(("family", "kind"), STREAMS)
def test_cuda_would_run_every_node_of_a_stream(
    device: str, family: str, kind: str, device_dumps: Callable[[str, str, str, str], list[NodeRecord]]
) -> None:
    records = device_dumps(family, kind, device.lower(), "")
    verdicts = [(verdict(r), r) for r in records]
    stops = (Verdict.ABORTS, Verdict.WRONG)
    bad = [(r.compute, r.op, r.name, why) for (v, why), r in verdicts if v in stops]
    assert not bad, bad[:5]
    back = Counter(why for (v, why), _ in verdicts if v is Verdict.FALLS_BACK)
    # the tiny FastConformer's 64 channels; the published models have 512 and 1024
    allowed = {"SSM_CONV of 64 channels (CUDA: multiples of 128)"} if family == "fc" else set()
    assert set(back) <= allowed, back
    ops = Counter(r.op for r in records)
    assert len(records) > 400 and ops["MUL_MAT"] > 40, ops  # the graphs were there to check
    if family == "voxtral":
        assert ops["ARGMAX"] > 0 and ops["ROPE"] > 0, ops  # decoder steps among them
    else:
        assert ops["SSM_CONV"] > 0 and ops["ARGMAX"] > 0, ops  # encoder chunks and joint steps
