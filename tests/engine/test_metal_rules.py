"""ggml's Metal rules (metal_rules.py) on hand-made nodes, and on every node of both families' streams
as the engine builds them for device memory (F16 and quantized weights, the cache type it picks for
a GPU, and flash attention where the device has it): none that Metal would stop the process on, and
none it would leave to the CPU. The engine asks the device whether it has the flash-attention kernel
for a model's head size: the published models' 64 and 128 are among Metal's, the tiny models' 16 is
not, so their flash nodes are held to the Metal kernel's own checks only."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import pytest

from tools.compare_node_dumps import Layout, NodeRecord

from .backend_rules import F16, F32, STREAMS, Verdict, layout, node
from .conftest import DEVICE_PARAMS
from .metal_rules import aborts, verdict

Q8_0, Q4_K = 8, 12


def quant(t: int, shape: tuple[int, int], block_bytes: int) -> Layout:
    row = shape[0] // 32 * block_bytes if t == Q8_0 else shape[0] // 256 * block_bytes
    return Layout(t, (*shape, 1, 1), (block_bytes, row, row * shape[1], row * shape[1]))


def test_products_find_a_kernel_for_their_types_and_width() -> None:
    q8 = quant(Q8_0, (128, 64), 34)
    for n in (1, 4, 16):  # matrix-vector, the small-batch kernel, matrix-matrix
        x = layout(F32, (128, n))
        assert verdict(node("MUL_MAT", layout(F32, (64, n)), q8, x))[0] is Verdict.RUNS, n
    # ggml-metal.metal has no kernel_mul_mv_q8_0_f16 nor kernel_mul_mv_f32_f16: a single F16 column
    # against such a left side gets no pipeline; sixteen columns take kernel_mul_mm_*_f16, which exist
    one_f16 = layout(F16, (128, 1))
    assert verdict(node("MUL_MAT", layout(F32, (64, 1)), q8, one_f16))[0] is Verdict.ABORTS
    assert verdict(node("MUL_MAT", layout(F32, (64, 1)), layout(F32, (128, 64)), one_f16))[0] is (
        Verdict.ABORTS
    )
    assert verdict(node("MUL_MAT", layout(F32, (64, 16)), q8, layout(F16, (128, 16))))[0] is Verdict.RUNS
    k_cache = layout(F16, (16, 40, 2))
    assert verdict(node("MUL_MAT", layout(F32, (40, 1, 2)), k_cache, layout(F16, (16, 1, 2))))[0] is (
        Verdict.RUNS
    )


def test_element_wise_ops_want_matching_types_and_whole_rows() -> None:
    a = layout(F32, (64, 14))
    half = layout(F32, (64, 14), (4, 512))  # every row's second half: rows still whole
    assert verdict(node("SIGMOID", a, half))[0] is Verdict.RUNS
    column = layout(F32, (14, 64), (256, 4))  # a transposed view: rows are not contiguous
    assert verdict(node("SIGMOID", a, column))[0] is Verdict.FALLS_BACK
    assert verdict(node("ADD", a, a, layout(F16, (64, 14))))[0] is Verdict.FALLS_BACK
    mixed = node("CONCAT", layout(F16, (64, 28)), layout(F16, (64, 14)), layout(F32, (64, 14)))
    assert verdict(mixed)[0] is Verdict.FALLS_BACK


def test_copies_flash_attention_and_ssm_conv() -> None:
    assert verdict(node("CPY", layout(F16, (64, 4)), layout(F32, (64, 4)), layout(F16, (64, 4))))[0] is (
        Verdict.RUNS
    )
    q8_dst = quant(Q8_0, (64, 4), 34)
    assert verdict(node("CPY", q8_dst, layout(F16, (64, 4)), q8_dst))[0] is Verdict.FALLS_BACK
    q, k, v = layout(F32, (128, 4, 8)), layout(F16, (128, 256, 2)), layout(F16, (128, 256, 2))
    out = layout(F32, (128, 8, 4))
    assert verdict(node("FLASH_ATTN_EXT", out, q, k, v, layout(F16, (256, 4))))[0] is Verdict.RUNS
    assert verdict(node("FLASH_ATTN_EXT", out, q, k, v, layout(F32, (256, 4))))[0] is Verdict.ABORTS
    small = layout(F32, (16, 4, 8))
    assert verdict(node("FLASH_ATTN_EXT", out, small, k, v))[0] is Verdict.FALLS_BACK  # head size 16
    x, w = layout(F32, (12, 512)), layout(F32, (9, 512))
    assert verdict(node("SSM_CONV", layout(F32, (512, 4)), x, w))[0] is Verdict.RUNS
    strided = layout(F32, (12, 512), (4, 64))
    assert verdict(node("SSM_CONV", layout(F32, (512, 4)), strided, w))[0] is Verdict.ABORTS


def test_an_op_the_rules_do_not_know_is_reported() -> None:
    v, why = verdict(node("RWKV_WKV7", layout(F32, (4,)), layout(F32, (4,))))
    assert v is Verdict.RUNS  # supports_op takes it, and it is no op of ours
    v, why = verdict(node("WIN_PART", layout(F32, (4,)), layout(F32, (4,))))
    assert v is Verdict.FALLS_BACK and "not an op this check knows" in why


@pytest.mark.parametrize("device", DEVICE_PARAMS)
@pytest.mark.parametrize(("family", "kind"), STREAMS)
def test_metal_would_run_every_node_of_a_stream(
    device: str, family: str, kind: str, device_dumps: Callable[[str, str, str, str], list[NodeRecord]]
) -> None:
    records = device_dumps(family, kind, device.lower(), "")  # the dumps the CUDA rules read
    ops = Counter(r.op for r in records)
    assert len(records) > 400 and ops["MUL_MAT"] > 40 and ops["ARGMAX"] > 0, ops  # the graphs were there
    # flash attention: Metal's kernel checks whatever the head size (the published models' are
    # Metal's; the tiny models' 16 is not, and on Metal the engine would take products instead)
    flash = [(r.compute, r.name, aborts(r)) for r in records if r.op == "FLASH_ATTN_EXT"]
    assert not [f for f in flash if f[2]], flash[:5]
    others = [(r, *verdict(r)) for r in records if r.op != "FLASH_ATTN_EXT"]
    bad = [(r.compute, r.op, r.name, why) for r, v, why in others if v is not Verdict.RUNS]
    assert not bad, bad[:5]
