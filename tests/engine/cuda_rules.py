"""What ggml 0.20.2's CUDA backend would do with one node of a graph, read from a node dump.

No CUDA is needed: the rules are ggml's own, ported from the pinned source distribution
(`libggml-python==0.20.2.post1`, ggml/src/ggml-cuda/): `ggml_backend_cuda_device_supports_op` in
ggml-cuda.cu decides whether the scheduler leaves a node to the CPU (a graph split, two copies and
a synchronisation), and the asserts and aborts in the op's own file stop the process on inputs that
supports_op let through. With the graphs the engine builds for device memory (dumped on whatever
non-CPU device a build has: lavapipe's Vulkan in CI), that shows what a CUDA run would meet before
one runs: the first GPU run (bench/README.md, 2026-12-04) found a gate that fell back to the CPU
18 times per graph, and a copy that ggml's CUDA backend writes to the wrong places.

Not modelled: which of CUDA's matrix product kernels takes a MUL_MAT (every product shape of both
families ran on an H200 in that run), fused kernels (ggml fuses only where the unfused ops are
supported), and flash attention (the engine asks the device itself: graph_attention.cpp).
"""

from __future__ import annotations

from tools.compare_node_dumps import NodeRecord

from .backend_rules import (
    BF16,
    F16,
    F32,
    I32,
    Q,
    Verdict,
    block,
    contiguous,
    contiguous_channels,
    contiguous_rows,
    element_rows,
    is_quantized,
    judge,
)

FLOATS = (F32, F16, BF16)


# ggml_op_desc names of the unary ops ggml-cuda.cu's supports_op accepts (on a contiguous source)
CUDA_UNARY = frozenset(
    "ABS SGN NEG STEP GELU SILU RELU SIGMOID HARDSIGMOID HARDSWISH GELU_ERF GELU_QUICK TANH EXP EXPM1 "
    "SOFTPLUS ELU XIELU FLOOR CEIL ROUND TRUNC".split()
)
CUDA_GLU = frozenset("REGLU GEGLU SWIGLU SWIGLU_OAI GEGLU_ERF GEGLU_QUICK".split())
# supports_op's answer does not depend on the sources for these
ALWAYS = frozenset(
    "NONE RESHAPE VIEW PERMUTE TRANSPOSE ADD_ID ADD1 SCALE SQR SQRT SIN COS CLAMP LOG CONT DIAG_MASK_INF "
    "SOFT_MAX ARGMAX COUNT_EQUAL PAD POOL_2D CONV_TRANSPOSE_2D UPSCALE PAD_REFLECT_1D ARANGE "
    "TIMESTEP_EMBEDDING LEAKY_RELU FILL CUMSUM TRI DIAG SOLVE_TRI FLASH_ATTN_EXT".split()
)
MUL_MAT_TYPES = frozenset(
    int(Q[name])
    for name in "F32 F16 BF16 Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q2_K Q3_K Q4_K Q5_K Q6_K Q8_K IQ1_M IQ1_S IQ2_S "
    "IQ2_XS IQ2_XXS IQ3_S IQ3_XXS IQ4_NL IQ4_XS".split()
)
GET_ROWS_TYPES = (MUL_MAT_TYPES - {int(Q.Q8_K), int(Q.IQ4_NL)}) | {I32}
# CPY pairs beyond "both of F32 / F16 / BF16" and "same type, both contiguous"
CPY_PAIRS = frozenset(
    [(F32, int(t)) for t in (Q.Q8_0, Q.Q4_0, Q.Q4_1, Q.Q5_0, Q.Q5_1, Q.IQ4_NL, Q.I32)]
    + [(int(t), F32) for t in (Q.Q8_0, Q.Q4_0, Q.Q4_1, Q.Q5_0, Q.Q5_1, Q.I32)]
    + [(I32, I32)]
)
SSM_CONV_WIDTHS = (3, 4, 5, 9, 15)  # ssm-conv.cu's kernel instances; any other width aborts


def supports(r: NodeRecord) -> str | None:
    """None where ggml_backend_cuda_device_supports_op accepts the node, else why not."""
    op, src = r.op, r.source_layouts
    s0 = src[0] if src else None
    if op in ALWAYS:
        return None
    if op in CUDA_UNARY:  # every unary op ggml 0.20.2 has
        return None if contiguous(s0) else f"unary {op} on a non-contiguous source"
    if op in CUDA_GLU:
        return None if contiguous(s0, 1) else f"{op} on a source whose rows are not contiguous"
    if op in ("MUL_MAT", "MUL_MAT_ID"):
        a, b = src[0], src[1]
        if not element_rows(a) or not element_rows(b):
            return "a product whose rows are not whole"
        if b.ggml_type == F16 and a.ggml_type != F16:
            return "an F16 right-hand side with a non-F16 left"
        return None if a.ggml_type in MUL_MAT_TYPES else f"a product of type {Q(a.ggml_type).name}"
    if op == "GET_ROWS":
        t = s0.ggml_type
        if t in (int(Q.IQ4_NL), int(Q.MXFP4)):
            return None if s0.shape[0] % 256 == 0 else "GET_ROWS of 32-blocks in rows not a multiple of 256"
        return None if t in GET_ROWS_TYPES else f"GET_ROWS of type {Q(t).name}"
    if op == "SET_ROWS":
        into = {F32, F16, BF16} | {int(Q[n]) for n in "Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 IQ4_NL".split()}
        ok = (r.ggml_type in into and s0.ggml_type == F32) or (r.ggml_type == F16 and s0.ggml_type == F16)
        return None if ok and src[1].ggml_type in (I32, int(Q.I64)) else "SET_ROWS of these types"
    if op == "CPY":
        a, b = src[0].ggml_type, src[1].ggml_type
        if (a in FLOATS and b in FLOATS) or (a, b) in CPY_PAIRS:
            return None
        same = a == b and contiguous(src[0]) and contiguous(src[1])
        return None if same else f"a copy {Q(a).name} -> {Q(b).name}"
    if op == "DUP":
        return None if s0.ggml_type not in (I32, int(Q.I16)) else "DUP of integers"
    if op == "REPEAT":
        return None if s0.ggml_type in (F32, F16) else "REPEAT of this type"
    if op == "CONCAT":
        a, b = src[0].ggml_type, src[1].ggml_type
        if a != b or a != r.ggml_type:
            return "CONCAT of mixed types"
        # (quantized ones are not modelled: their rule needs the dim, which a dump does not hold)
        return None if not is_quantized(a) else "CONCAT of quantized tensors"
    if op in ("NORM", "RMS_NORM", "L2_NORM"):
        return None if contiguous_rows(s0) else f"{op} on rows that are not whole"
    if op in ("ADD", "SUB", "MUL", "DIV"):
        ok = all(t in (F32, F16) for t in (src[0].ggml_type, src[1].ggml_type, r.ggml_type))
        return None if ok else f"{op} of these types"
    if op == "SSM_CONV":
        channels = s0.shape[1]
        return None if channels % 128 == 0 else f"SSM_CONV of {channels} channels (CUDA: multiples of 128)"
    if op == "ROPE":
        return None if element_rows(s0) and contiguous(s0, 2) else "ROPE on a strided source"
    if op in ("IM2COL", "CONV_2D"):
        return None if contiguous(src[0]) and contiguous(src[1]) else f"{op} of a strided tensor"
    if op == "CONV_2D_DW":
        return None if s0.ggml_type == F32 else "CONV_2D_DW with a non-F32 kernel"
    if op == "ACC":
        return None if contiguous(src[0]) and contiguous(src[1]) else "ACC of a strided tensor"
    if op == "SUM":
        return None if contiguous_rows(s0) else "SUM of rows that are not whole"
    if op in ("SUM_ROWS", "MEAN", "GROUP_NORM"):
        return None if contiguous(s0) else f"{op} of a strided tensor"
    if op in ("ARGSORT", "TOP_K"):
        return None if s0.shape[0] <= 1024 else f"{op} over more than 1024 values"
    return f"{op} is not an op this check knows (add ggml-cuda.cu's rule for it)"


def aborts(r: NodeRecord) -> str | None:
    """Why the op's CUDA kernel would stop the process (GGML_ASSERT / GGML_ABORT), for the ops the
    engine's graphs use, where supports_op accepted it; None where it runs."""
    op, src, t = r.op, r.source_layouts, r.ggml_type
    s0 = src[0] if src else None
    if op in CUDA_UNARY:  # unary.cu
        ok = s0.ggml_type in (F32, F16) and s0.ggml_type == t
        return None if ok else f"unary {op} from {Q(s0.ggml_type).name} to {Q(t).name}"
    if op == "SSM_CONV":  # ssm-conv.cu
        x, w = src[0], src[1]
        if w.shape[0] not in SSM_CONV_WIDTHS:
            return f"SSM_CONV of width {w.shape[0]} (kernels: {SSM_CONV_WIDTHS})"
        ok = x.ggml_type == t == F32 and x.strides[0] == w.strides[0] == 4 and x.strides[1] == x.shape[0] * 4
        return None if ok else "SSM_CONV on strided or non-F32 tensors"
    if op == "CONV_2D_DW":  # conv2d-dw.cu
        if not (src[0].ggml_type == src[1].ggml_type == t == F32):
            return "CONV_2D_DW of non-F32 tensors"
        ok = contiguous(src[1]) or contiguous_channels(src[1])
        return None if ok else "CONV_2D_DW input neither contiguous nor channels-contiguous"
    if op == "ARGMAX":  # argmax.cu
        ok = s0.ggml_type == F32 and t == I32 and contiguous(s0)
        return None if ok else "ARGMAX of a strided or non-F32 tensor"
    if op == "GET_ROWS":  # getrows.cu
        idx = src[1]
        ok = idx.ggml_type == I32 and idx.shape[3] == 1 and element_rows(s0) and element_rows(idx)
        return None if ok else "GET_ROWS with these indices or strides"
    if op in ("NORM", "RMS_NORM"):  # norm.cu
        return None if s0.ggml_type == F32 and t == F32 and element_rows(s0) else f"{op} of a non-F32 tensor"
    if op in ("SCALE", "PAD"):  # scale.cu, pad.cu
        return None if s0.ggml_type == F32 and t == F32 else f"{op} of a non-F32 tensor"
    if op == "SOFT_MAX":  # softmax.cu
        mask_ok = len(src) < 2 or src[1].ggml_type in (F16, F32)
        return None if s0.ggml_type == F32 and t == F32 and mask_ok else "SOFT_MAX of these types"
    if op == "ROPE":  # rope.cu
        ok = s0.shape[0] % 2 == 0 and s0.ggml_type in (F32, F16) and (s0.ggml_type == t or t == F16)
        return None if ok else "ROPE of an odd row or these types"
    if op == "IM2COL":  # im2col.cu
        return None if src[1].ggml_type == F32 and t in (F32, F16) else "IM2COL of these types"
    if op == "CONCAT":  # concat.cu
        return None if block(s0.ggml_type)[1] in (1, 2, 4, 8) else "CONCAT of this element size"
    return None


def transposed_copy_into_a_strided_view(r: NodeRecord) -> bool:
    """ggml 0.20.2's CUDA copy (cpy.cu, `can_be_transposed`) sends a same-type copy whose source has
    element-sized row strides to a kernel that writes the destination as if it were contiguous
    (ggml-org/ggml#1497); with a strided destination the values land in the wrong places."""
    if r.op != "CPY" or len(r.source_layouts) < 2:
        return False
    src, dst = r.source_layouts[0], r.source_layouts[1]
    if src.ggml_type != dst.ggml_type or src.ggml_type not in (F32, F16, I32, BF16):
        return False
    size = block(src.ggml_type)[1]
    transposable = (
        src.strides[1] == size and src.shape[3] == 1 and src.strides[2] == src.shape[0] * src.shape[1] * size
    )
    return transposable and not contiguous(dst)


def wrong(r: NodeRecord) -> str | None:
    """Why CUDA would compute the node wrongly (a known ggml bug), None where it would not."""
    if transposed_copy_into_a_strided_view(r):
        return "a transposed copy into a strided view (ggml-org/ggml#1497)"
    return None


def verdict(r: NodeRecord) -> tuple[Verdict, str]:
    """What CUDA would do with node `r`, and why (empty where it runs)."""
    return judge(r, supports, aborts, wrong)
