"""engine/GGUF.md's FastConformer layout as data: metadata keys and each tensor's documented ggml shape."""

from __future__ import annotations

import re

U32_KEYS = [
    "fastconformer.format_version",
    "fastconformer.audio.sample_rate",
    "fastconformer.audio.n_fft",
    "fastconformer.audio.win_length",
    "fastconformer.audio.hop_length",
    "fastconformer.audio.n_mel",
    "fastconformer.encoder.n_embd",
    "fastconformer.encoder.n_layer",
    "fastconformer.encoder.n_head",
    "fastconformer.encoder.n_ff",
    "fastconformer.encoder.conv_kernel",
    "fastconformer.encoder.subsampling_factor",
    "fastconformer.encoder.subsampling_channels",
    "fastconformer.encoder.subsampling_kernel",
    "fastconformer.encoder.subsampling_stride",
    "fastconformer.encoder.left_context",
    "fastconformer.decoder.n_embd",
    "fastconformer.decoder.n_layer",
    "fastconformer.joint.n_embd",
    "fastconformer.n_vocab",
    "fastconformer.blank_id",
    "fastconformer.max_symbols_per_step",
]
F32_KEYS = [
    "fastconformer.audio.preemphasis",
    "fastconformer.audio.log_guard",
    "fastconformer.encoder.norm_eps",
    "fastconformer.encoder.xscale",
]
STR_KEYS = [
    "general.architecture",
    "general.name",
    "fastconformer.variant",
    "fastconformer.encoder.conv_norm",
    "fastconformer.joint.activation",
]
ARRAY_KEYS = [
    "fastconformer.encoder.lookaheads",
    "tokenizer.fastconformer.pieces",
    "tokenizer.fastconformer.piece_types",
]
I32_KEYS = ["tokenizer.fastconformer.eou_id", "tokenizer.fastconformer.eob_id"]
PROMPT_KEYS = [
    "fastconformer.prompt.n_prompts",
    "fastconformer.prompt.n_ff",
    "fastconformer.prompt.default_id",
    "fastconformer.prompt.names",
    "fastconformer.prompt.ids",
]
ALL_KEYS = U32_KEYS + F32_KEYS + STR_KEYS + ARRAY_KEYS + I32_KEYS


def documented_shapes(meta: dict) -> dict[str, list[int]]:
    """Tensor name -> ggml shape (ne0 first), from the table in GGUF.md and the file's own metadata."""
    f = "fastconformer."
    e, c, k = (
        meta[f + "encoder.n_embd"],
        meta[f + "encoder.subsampling_channels"],
        meta[f + "encoder.subsampling_kernel"],
    )
    s, ff, kern = (
        meta[f + "encoder.subsampling_stride"],
        meta[f + "encoder.n_ff"],
        meta[f + "encoder.conv_kernel"],
    )
    heads, h, j, v = (
        meta[f + "encoder.n_head"],
        meta[f + "decoder.n_embd"],
        meta[f + "joint.n_embd"],
        meta[f + "n_vocab"],
    )
    stages = meta[f + "encoder.subsampling_factor"].bit_length() - 1
    freq = meta[f + "audio.n_mel"]
    for _ in range(stages):
        freq = (freq + k - 1 + s - 1 - k) // s + 1
    shapes = {
        "audio.mel_filters": [meta[f + "audio.n_mel"], meta[f + "audio.n_fft"] // 2 + 1],
        "audio.window": [meta[f + "audio.win_length"]],
        "enc.sub.0.weight": [k, k, 1, c],
        "enc.sub.0.bias": [c],
        "enc.sub.out.weight": [c * freq, e],
        "enc.sub.out.bias": [e],
        "enc.proj.weight": [e, j],
        "enc.proj.bias": [j],
        "dec.embd.weight": [h, v],
        "dec.proj.weight": [h, j],
        "dec.proj.bias": [j],
        "joint.out.weight": [j, v],
        "joint.out.bias": [v],
    }
    for n in range(1, stages):
        shapes |= {
            f"enc.sub.{n}.dw.weight": [k, k, 1, c],
            f"enc.sub.{n}.dw.bias": [c],
            f"enc.sub.{n}.pw.weight": [c, c],
            f"enc.sub.{n}.pw.bias": [c],
        }
    for n in range(meta[f + "encoder.n_layer"]):
        g = f"enc.blk.{n}."
        for norm in ("ffn1_norm", "attn_norm", "conv_norm", "conv_dw_norm", "ffn2_norm", "out_norm"):
            shapes |= {f"{g}{norm}.weight": [e], f"{g}{norm}.bias": [e]}
        for ffn in ("ffn1", "ffn2"):
            shapes |= {
                f"{g}{ffn}_up.weight": [e, ff],
                f"{g}{ffn}_up.bias": [ff],
                f"{g}{ffn}_down.weight": [ff, e],
                f"{g}{ffn}_down.bias": [e],
            }
        for lin in ("attn_q", "attn_k", "attn_v", "attn_out"):
            shapes |= {f"{g}{lin}.weight": [e, e], f"{g}{lin}.bias": [e]}
        shapes |= {
            f"{g}attn_pos.weight": [e, e],
            f"{g}attn_pos_bias_u": [e // heads, heads],
            f"{g}attn_pos_bias_v": [e // heads, heads],
            f"{g}conv_pw1.weight": [e, 2 * e],
            f"{g}conv_pw1.bias": [2 * e],
            f"{g}conv_dw.weight": [kern, e],
            f"{g}conv_dw.bias": [e],
            f"{g}conv_pw2.weight": [e, e],
            f"{g}conv_pw2.bias": [e],
        }
    for n in range(meta[f + "decoder.n_layer"]):
        shapes |= {
            f"dec.lstm.{n}.w_ih": [h, 4 * h],
            f"dec.lstm.{n}.w_hh": [h, 4 * h],
            f"dec.lstm.{n}.b_ih": [4 * h],
            f"dec.lstm.{n}.b_hh": [4 * h],
        }
    if f + "prompt.n_prompts" in meta:
        pf, p = meta[f + "prompt.n_ff"], meta[f + "prompt.n_prompts"]
        shapes |= {
            "prompt.fc1.weight": [e, pf],
            "prompt.fc1_lang.weight": [pf, p],
            "prompt.fc1.bias": [pf],
            "prompt.fc2.weight": [pf, e],
            "prompt.fc2.bias": [e],
        }
    return shapes


def stays_f32(name: str) -> bool:
    """GGUF.md: norms, biases, depthwise kernels, subsampling convs, pos biases, tables, fc1_lang are F32."""
    return bool(
        name.startswith(("audio.", "enc.sub.0.", "prompt.fc1_lang"))
        or re.match(r"enc\.sub\.\d+\.(dw|pw)\.", name)
        or name.endswith((".bias", "_norm.weight", "conv_dw.weight", "attn_pos_bias_u", "attn_pos_bias_v"))
        or re.match(r"dec\.lstm\.\d+\.b_", name)
    )
