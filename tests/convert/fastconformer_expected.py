"""What engine/GGUF.md says each FastConformer tensor must hold, computed from a checkpoint state dict.

Written from the layout table, independently of the converter: a second statement of the mapping
(names, documented reshapes, zero biases, batch-norm folding, prompt split) that the tests compare with.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# GGUF module -> (HF module, NeMo module) under encoder.layers.N.
_LAYER = {
    "ffn1_norm": ("norm_feed_forward1",) * 2,
    "ffn1_up": ("feed_forward1.linear1",) * 2,
    "ffn1_down": ("feed_forward1.linear2",) * 2,
    "attn_norm": ("norm_self_att",) * 2,
    "attn_q": ("self_attn.q_proj", "self_attn.linear_q"),
    "attn_k": ("self_attn.k_proj", "self_attn.linear_k"),
    "attn_v": ("self_attn.v_proj", "self_attn.linear_v"),
    "attn_out": ("self_attn.o_proj", "self_attn.linear_out"),
    "conv_norm": ("norm_conv",) * 2,
    "conv_pw1": ("conv.pointwise_conv1",) * 2,
    "conv_dw": ("conv.depthwise_conv",) * 2,
    "conv_pw2": ("conv.pointwise_conv2",) * 2,
    "ffn2_norm": ("norm_feed_forward2",) * 2,
    "ffn2_up": ("feed_forward2.linear1",) * 2,
    "ffn2_down": ("feed_forward2.linear2",) * 2,
    "out_norm": ("norm_out",) * 2,
}
_TOP = {
    "enc.sub.out": ("encoder.subsampling.linear", "encoder.pre_encode.out"),
    "enc.proj": ("encoder_projector", "joint.enc"),
    "dec.proj": ("decoder.decoder_projector", "joint.pred"),
    "joint.out": ("joint.head", "joint.joint_net.2"),
    "prompt.fc2": ("prompt_projector.linear_2", None),
}


@dataclass(frozen=True)
class Shape:
    layers: int
    stages: int
    dec_layers: int
    embd: int
    prompt: bool = False
    conv_norm: str = "layer_norm"  # or batch_norm (folded) / fused_batch_norm
    joint_out: str = ""  # NeMo joint Linear module when not joint.joint_net.2


def expected_tensors(sd: dict[str, np.ndarray], nemo: bool, s: Shape) -> dict[str, np.ndarray]:
    """GGUF name -> float32 numpy array (numpy order) for every checkpoint-derived tensor."""
    col = 1 if nemo else 0
    out: dict[str, np.ndarray] = {}

    def take(gguf: str, module: str, zero_bias: int = 0) -> None:
        out[gguf + ".weight"] = sd[module + ".weight"]
        bias = sd.get(module + ".bias")
        if bias is not None or zero_bias:
            out[gguf + ".bias"] = bias if bias is not None else np.zeros(zero_bias, np.float32)

    sub = "encoder.pre_encode.conv." if nemo else "encoder.subsampling."
    take("enc.sub.0", sub + "0" if nemo else sub + "conv_in")
    for n in range(1, s.stages):
        dw = f"{sub}{3 * n - 1}" if nemo else f"{sub}layers.{n - 1}.depthwise_conv"
        pw = f"{sub}{3 * n}" if nemo else f"{sub}layers.{n - 1}.pointwise_conv"
        take(f"enc.sub.{n}.dw", dw)
        take(f"enc.sub.{n}.pw", pw)
        out[f"enc.sub.{n}.pw.weight"] = out[f"enc.sub.{n}.pw.weight"][:, :, 0, 0]
    for gguf, modules in _TOP.items():
        if modules[col] is not None and (s.prompt or not gguf.startswith("prompt.")):
            take(gguf, s.joint_out if gguf == "joint.out" and s.joint_out else modules[col])
    for i in range(s.layers):
        h, g = f"encoder.layers.{i}.", f"enc.blk.{i}."
        for gguf, modules in _LAYER.items():
            size = sd[h + modules[col] + ".weight"].shape[0]
            take(g + gguf, h + modules[col], zero_bias=size)
        out[g + "conv_pw1.weight"] = out[g + "conv_pw1.weight"][:, :, 0]
        out[g + "conv_pw2.weight"] = out[g + "conv_pw2.weight"][:, :, 0]
        out[g + "conv_dw.weight"] = out[g + "conv_dw.weight"][:, 0, :]
        out[g + "attn_pos.weight"] = sd[
            h + ("self_attn.linear_pos" if nemo else "self_attn.relative_k_proj") + ".weight"
        ]
        out[g + "attn_pos_bias_u"] = sd[h + ("self_attn.pos_bias_u" if nemo else "self_attn.bias_u")]
        out[g + "attn_pos_bias_v"] = sd[h + ("self_attn.pos_bias_v" if nemo else "self_attn.bias_v")]
        norm = h + ("conv.batch_norm." if nemo else "conv.norm.")
        gamma, beta = sd[norm + "weight"], sd[norm + "bias"]
        if s.conv_norm == "batch_norm":
            scale = gamma / np.sqrt(sd[norm + "running_var"] + np.float32(1e-5))
            gamma, beta = scale, beta - sd[norm + "running_mean"] * scale
        out[g + "conv_dw_norm.weight"], out[g + "conv_dw_norm.bias"] = gamma, beta
    if s.prompt:
        w1 = sd["prompt_projector.linear_1.weight"]
        out["prompt.fc1.weight"] = w1[:, : s.embd]
        out["prompt.fc1_lang.weight"] = w1[:, s.embd :].T
        out["prompt.fc1.bias"] = sd["prompt_projector.linear_1.bias"]
    embed = "decoder.prediction.embed.weight" if nemo else "decoder.embedding.weight"
    lstm = "decoder.prediction.dec_rnn.lstm." if nemo else "decoder.lstm."
    out["dec.embd.weight"] = sd[embed]
    for n in range(s.dec_layers):
        for kind in ("ih", "hh"):
            out[f"dec.lstm.{n}.w_{kind}"] = sd[f"{lstm}weight_{kind}_l{n}"]
            out[f"dec.lstm.{n}.b_{kind}"] = sd[f"{lstm}bias_{kind}_l{n}"]
    return {k: np.asarray(v, dtype=np.float32) for k, v in out.items()}
