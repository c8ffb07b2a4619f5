"""What ggml 0.20.2's Metal backend would do with one node of a graph, read from a node dump.

The macOS installers run both model families on Metal, and no Mac is at hand: these are ggml's own
rules, ported from the pinned source distribution (`libggml-python==0.20.2.post1`,
ggml/src/ggml-metal/) for an Apple silicon GPU (simdgroup reductions and matrix products, as on
every M-series chip). `ggml_metal_device_supports_op` (ggml-metal-device.m) decides whether the
scheduler leaves a node to the CPU; the asserts in ggml-metal-ops.cpp and ggml-metal-device.cpp
stop the process on inputs supports_op let through; and a kernel is looked up by name from the
node's types (`kernel_mul_mv_<a>_<b>`, ...), so a pair ggml-metal.metal has no kernel for gets no
pipeline, which the encoder cannot run.

Not modelled: PAD's padding sides (a dump holds no op parameters; Metal takes only padding at the
end, which is all ggml_pad adds, and the engine calls no ggml_pad_ext), BF16 (a Metal device
without bfloat refuses it; no dumped graph holds any), and results: no Metal kernel is known to
compute our nodes wrongly.
"""

from __future__ import annotations

from tools.compare_node_dumps import NodeRecord

from .backend_rules import BF16, F16, F32, I32, Q, Verdict, block, contiguous, contiguous_rows, judge

I8, I16, I64 = int(Q.I8), int(Q.I16), int(Q.I64)
FLOAT_PAIR = (F32, F16)

# ggml_op_desc names of the unary ops and the element-wise math supports_op accepts on rows that are
# contiguous, of F32 or F16
UNARY = frozenset(
    "TANH RELU SIGMOID GELU GELU_ERF GELU_QUICK SILU ELU NEG ABS SGN STEP HARDSWISH HARDSIGMOID EXP "
    "SOFTPLUS EXPM1 FLOOR CEIL ROUND TRUNC XIELU SCALE FILL CLAMP SQR SQRT SIN COS LOG".split()
)
GLU = frozenset("REGLU GEGLU SWIGLU SWIGLU_OAI GEGLU_ERF GEGLU_QUICK".split())
ALWAYS = frozenset(
    "NONE RESHAPE VIEW TRANSPOSE PERMUTE REPEAT CONV_TRANSPOSE_1D ROPE ARANGE ARGSORT TOP_K DIAG ARGMAX "
    "SSM_CONV SSM_SCAN RWKV_WKV6 RWKV_WKV7 GET_ROWS MUL_MAT MUL_MAT_ID PAD".split()
)
ROWS = frozenset("SUM_ROWS CUMSUM MEAN SOFT_MAX GROUP_NORM L2_NORM NORM RMS_NORM".split())
FLASH_HEAD_SIZES = (32, 40, 48, 64, 72, 80, 96, 112, 128, 192, 256, 320, 512, 576)
FLASH_KV_TYPES = frozenset(int(Q[n]) for n in "F32 F16 Q8_0 Q4_0 Q4_1 Q5_0 Q5_1".split())
LEGACY_QUANTS = frozenset(int(Q[n]) for n in "Q4_0 Q4_1 Q5_0 Q5_1 Q8_0".split())
# CPY / CONT / DUP / SET: the destination types each source type may be copied to
CPY_TO = {
    F32: frozenset({F32, F16, BF16, I32, int(Q.IQ4_NL), int(Q.TQ2_0)} | LEGACY_QUANTS),
    F16: frozenset(FLOAT_PAIR),
    BF16: frozenset({F32, BF16}),
    I32: frozenset({F32, I32}),
    **{t: frozenset(FLOAT_PAIR) for t in LEGACY_QUANTS | {int(Q.TQ2_0)}},
}
SET_ROWS_TO = frozenset({F32, F16, BF16, int(Q.IQ4_NL), int(Q.TQ2_0)} | LEGACY_QUANTS)

# The matrix product kernels ggml-metal.metal has, by (left, right) type: matrix-vector (any width),
# the small-batch "ext" one (2-8 columns, right F32) and matrix-matrix (more than 8 columns)
K_QUANTS = frozenset(int(Q[n]) for n in "Q2_K Q3_K Q4_K Q5_K Q6_K".split())
_QUANTS = frozenset(
    int(Q[n])
    for n in "Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q2_K Q3_K Q4_K Q5_K Q6_K IQ1_M IQ1_S IQ2_S IQ2_XS IQ2_XXS IQ3_S "
    "IQ3_XXS IQ4_NL IQ4_XS MXFP4 TQ2_0".split()
)
MV_KERNELS = frozenset(
    {(F32, F32), (F16, F32), (F16, F16), (BF16, F32), (BF16, BF16)} | {(t, F32) for t in _QUANTS}
)
EXT_LEFT = frozenset({F32, F16, BF16, int(Q.IQ4_NL), int(Q.MXFP4)} | LEGACY_QUANTS | K_QUANTS)
MM_KERNELS = frozenset(
    {(F32, F32), (F32, F16), (F16, F32), (F16, F16), (BF16, F32)}
    | {(t, r) for t in _QUANTS for r in FLOAT_PAIR}
)


def name(t: int) -> str:
    return Q(t).name


def kernel_type(t: int) -> str:
    """ggml_type_name, as kernel names spell types: f16, q8_0, q4_K."""
    n = Q(t).name.lower()
    return n[:-1] + "K" if n.endswith("_k") else n


def supports(r: NodeRecord) -> str | None:
    """None where ggml_metal_device_supports_op accepts the node, else why not."""
    op, src = r.op, r.source_layouts
    s0 = src[0] if src else None
    if op in ALWAYS:
        return None
    if op in UNARY:
        ok = contiguous_rows(s0) and s0.ggml_type in FLOAT_PAIR
        return None if ok else f"{op} on rows that are not whole, or not F32/F16"
    if op in GLU:
        ok = contiguous(s0, 1) and s0.ggml_type in FLOAT_PAIR
        return None if ok else f"{op} on a source whose rows are not contiguous"
    if op == "CONCAT":
        a, b = src[0].ggml_type, src[1].ggml_type
        ok = a == b == r.ggml_type and a in (F32, F16, I8, I16, I32, I64)
        return None if ok else f"CONCAT of {name(a)} and {name(b)}"
    if op in ("ADD", "SUB", "MUL", "DIV", "ADD_ID"):
        a, b = src[0], src[1]
        ok = (
            contiguous_rows(a)
            and contiguous_rows(b)
            and a.ggml_type in FLOAT_PAIR
            and a.ggml_type == b.ggml_type
        )
        return None if ok else f"{op} of {name(a.ggml_type)} and {name(b.ggml_type)}, or of split rows"
    if op in ROWS:
        return None if contiguous_rows(s0) else f"{op} on rows that are not whole"
    if op == "IM2COL":
        ok = contiguous(src[1]) and src[1].ggml_type == F32 and r.ggml_type in FLOAT_PAIR
        return None if ok else "IM2COL of a strided or non-F32 input"
    if op in ("CONV_2D", "CONV_2D_DW"):
        ok = src[1].ggml_type == F32 and r.ggml_type == F32 and s0.ggml_type in FLOAT_PAIR
        ok = ok and (op == "CONV_2D_DW" or contiguous(s0))
        return None if ok else f"{op} of these types"
    if op == "FLASH_ATTN_EXT":
        q, k, v = src[0], src[1], src[2]
        if q.shape[0] not in FLASH_HEAD_SIZES:
            return f"flash attention with head size {q.shape[0]}"
        ok = k.ggml_type == v.ggml_type and k.ggml_type in FLASH_KV_TYPES
        return None if ok else f"flash attention over a {name(k.ggml_type)}/{name(v.ggml_type)} cache"
    if op in ("CPY", "CONT", "DUP", "SET"):
        a = s0.ggml_type
        return None if r.ggml_type in CPY_TO.get(a, ()) else f"a copy {name(a)} -> {name(r.ggml_type)}"
    if op == "SET_ROWS":
        ok = (s0.ggml_type == F16 and r.ggml_type == F16) or (
            s0.ggml_type == F32 and r.ggml_type in SET_ROWS_TO
        )
        return None if ok else f"SET_ROWS {name(s0.ggml_type)} -> {name(r.ggml_type)}"
    return f"{op} is not an op this check knows (add ggml-metal-device.m's rule for it)"


def transposed(x: object) -> bool:
    """ggml_is_transposed: nb[0] > nb[1]."""
    return x.strides[0] > x.strides[1]  # type: ignore[attr-defined]


def product_kernel(r: NodeRecord) -> str | None:
    """Why ggml_metal_op_mul_mat would find no kernel for the product (it picks one by its shape)."""
    a, b = r.source_layouts[0], r.source_layouts[1]
    pair = (a.ggml_type, b.ggml_type)
    k, n = a.shape[0], b.shape[1]
    small = (2 <= n <= 8) if a.ggml_type not in K_QUANTS else (4 <= n <= 8)
    if b.ggml_type == F32 and k % 128 == 0 and a.ggml_type in EXT_LEFT and small:
        return None  # kernel_mul_mv_ext_<a>_f32_r1_<n>: every such left type has one
    suffix = f"{kernel_type(pair[0])}_{kernel_type(pair[1])}"
    if not transposed(a) and not transposed(b) and k >= 64 and n > 8:
        return None if pair in MM_KERNELS else f"no kernel_mul_mm_{suffix}"
    return None if pair in MV_KERNELS else f"no kernel_mul_mv_{suffix}"


def aborts(r: NodeRecord) -> str | None:
    """Why the Metal backend would stop the process on a node supports_op accepted; None where it
    runs (for the ops the engine's graphs use)."""
    op, src, t = r.op, r.source_layouts, r.ggml_type
    s0 = src[0] if src else None
    if op == "MUL_MAT":
        return product_kernel(r)
    if op == "SSM_CONV":  # get_pipeline_ssm_conv
        ok = src[0].ggml_type == src[1].ggml_type == F32 and contiguous(src[0]) and contiguous(src[1])
        return None if ok else "SSM_CONV of a strided or non-F32 tensor"
    if op == "ARGMAX":  # get_pipeline_argmax
        ok = s0.ggml_type == F32 and contiguous(s0, 1) and s0.strides[0] == 4
        return None if ok else "ARGMAX of a strided or non-F32 tensor"
    if op == "SOFT_MAX":  # get_pipeline_soft_max
        return None if len(src) < 2 or src[1].ggml_type in FLOAT_PAIR else "SOFT_MAX with this mask type"
    if op in ("CPY", "CONT", "DUP"):  # ggml_metal_op_cpy
        return None if s0.shape[0] % block(s0.ggml_type)[0] == 0 else "a copy of part of a block"
    if op == "ROPE":  # ggml_metal_op_rope: a position per token at least
        pos = src[1].shape[0]
        return (
            None if pos >= s0.shape[2] and pos % s0.shape[2] == 0 else "ROPE with fewer positions than tokens"
        )
    if op == "FLASH_ATTN_EXT":  # ggml_metal_op_flash_attn_ext
        q, k, v = src[0], src[1], src[2]
        mask = src[3] if len(src) > 3 else None
        ok = (
            q.shape[0] % 4 == 0 and q.ggml_type == F32 and k.shape[1:3] == v.shape[1:3] and q.shape[1] < 65536
        )
        if mask is not None:
            ok = ok and mask.ggml_type == F16 and mask.shape[1] >= q.shape[1]
        return None if ok else "flash attention with these shapes or mask"
    if op == "IM2COL" and t not in FLOAT_PAIR:
        return "IM2COL into this type"
    return None


def verdict(r: NodeRecord) -> tuple[Verdict, str]:
    """What Metal would do with node `r`, and why (empty where it runs)."""
    return judge(r, supports, aborts)
