"""Which GGUF tensor comes from which checkpoint tensor, with its expected shape and storage class.

Names and ggml shapes follow engine/GGUF.md; checkpoint names follow ``save_pretrained`` (HF) and
Mistral's ``consolidated.safetensors`` (as mapped by transformers' conversion script). Shapes here
are PyTorch / numpy order (the reverse of ggml order).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .checkpoint import Layout
from .hparams import ModelParams

_M_ENC = "mm_streams_embeddings.embedding_module.whisper_encoder."
_M_PROJ = "mm_streams_embeddings.embedding_module.audio_language_projection."
_M_EMBD = ("mm_streams_embeddings.embedding_module.tok_embeddings.weight", "tok_embeddings.weight")
_H_DEC = "language_model.model."

# tied output heads: tolerated when equal to the token embedding, never written
TIED_HEADS: dict[Layout, tuple[str, ...]] = {
    "hf": ("lm_head.weight", "language_model.lm_head.weight"),
    "mistral": ("output.weight",),
}
EMBEDDING_NAME = "dec.token_embd.weight"


@dataclass(frozen=True)
class TensorSpec:
    """One checkpoint tensor to write into the GGUF."""

    name: str  # GGUF tensor name
    shape: tuple[int, ...]  # PyTorch order
    matrix: bool  # True: stored in the requested outtype; False: always F32
    sources: tuple[str, ...]  # accepted checkpoint names; several = aliases that must be equal
    rope_heads: int = 0  # > 0: rows are interleaved-RoPE and need the NeoX permutation


def normalize_hf_name(name: str) -> str:
    """Canonical save_pretrained name: drop a leading ``model.`` and use ``language_model.model.*``."""
    if name.startswith("model."):
        name = name[len("model.") :]
    if (
        name.startswith("language_model.")
        and not name.startswith(_H_DEC)
        and not name.startswith("language_model.lm_head.")
    ):
        name = _H_DEC + name[len("language_model.") :]
    return name


def tensor_specs(p: ModelParams, ada_dim: int, layout: Layout) -> list[TensorSpec]:
    """Every weight tensor the GGUF holds, in file order (frontend tables are added separately)."""
    mistral = layout == "mistral"
    specs: list[TensorSpec] = []

    def add(
        name: str, shape: tuple[int, ...], matrix: bool, hf: str, m: str | tuple[str, ...], rope: int = 0
    ) -> None:
        sources = (m,) if isinstance(m, str) else m
        specs.append(TensorSpec(name, shape, matrix, sources if mistral else (hf,), rope if mistral else 0))

    e, q_enc = p.enc_n_embd, p.enc_n_head * p.enc_head_dim
    add(
        "enc.conv1.weight",
        (e, p.n_mel, 3),
        True,
        "audio_tower.embedder.conv1.weight",
        _M_ENC + "conv_layers.0.conv.weight",
    )
    add("enc.conv1.bias", (e,), False, "audio_tower.embedder.conv1.bias", _M_ENC + "conv_layers.0.conv.bias")
    add(
        "enc.conv2.weight",
        (e, e, 3),
        True,
        "audio_tower.embedder.conv2.weight",
        _M_ENC + "conv_layers.1.conv.weight",
    )
    add("enc.conv2.bias", (e,), False, "audio_tower.embedder.conv2.bias", _M_ENC + "conv_layers.1.conv.bias")
    for i in range(p.enc_n_layer):
        g, h, m = f"enc.blk.{i}.", f"audio_tower.layers.{i}.", f"{_M_ENC}transformer.layers.{i}."
        add(
            g + "attn_norm.weight",
            (e,),
            False,
            h + "self_attn_layer_norm.weight",
            m + "attention_norm.weight",
        )
        add(
            g + "attn_q.weight",
            (q_enc, e),
            True,
            h + "self_attn.q_proj.weight",
            m + "attention.wq.weight",
            p.enc_n_head,
        )
        add(
            g + "attn_q.bias",
            (q_enc,),
            False,
            h + "self_attn.q_proj.bias",
            m + "attention.wq.bias",
            p.enc_n_head,
        )
        add(
            g + "attn_k.weight",
            (q_enc, e),
            True,
            h + "self_attn.k_proj.weight",
            m + "attention.wk.weight",
            p.enc_n_head,
        )
        add(g + "attn_v.weight", (q_enc, e), True, h + "self_attn.v_proj.weight", m + "attention.wv.weight")
        add(g + "attn_v.bias", (q_enc,), False, h + "self_attn.v_proj.bias", m + "attention.wv.bias")
        add(g + "attn_out.weight", (e, q_enc), True, h + "self_attn.o_proj.weight", m + "attention.wo.weight")
        add(g + "attn_out.bias", (e,), False, h + "self_attn.o_proj.bias", m + "attention.wo.bias")
        add(g + "ffn_norm.weight", (e,), False, h + "final_layer_norm.weight", m + "ffn_norm.weight")
        add(
            g + "ffn_gate.weight",
            (p.enc_n_ff, e),
            True,
            h + "mlp.gate_proj.weight",
            m + "feed_forward.w1.weight",
        )
        add(
            g + "ffn_up.weight", (p.enc_n_ff, e), True, h + "mlp.up_proj.weight", m + "feed_forward.w3.weight"
        )
        add(
            g + "ffn_down.weight",
            (e, p.enc_n_ff),
            True,
            h + "mlp.down_proj.weight",
            m + "feed_forward.w2.weight",
        )
        add(g + "ffn_down.bias", (e,), False, h + "mlp.down_proj.bias", m + "feed_forward.w2.bias")
    add("enc.norm.weight", (e,), False, "audio_tower.norm.weight", _M_ENC + "transformer.norm.weight")

    d = p.dec_n_embd
    add(
        "proj.linear_1.weight",
        (d, p.downsample_factor * e),
        True,
        "multi_modal_projector.linear_1.weight",
        _M_PROJ + "0.weight",
    )
    add("proj.linear_2.weight", (d, d), True, "multi_modal_projector.linear_2.weight", _M_PROJ + "2.weight")

    q_dec, kv_dec = p.dec_n_head * p.dec_head_dim, p.dec_n_head_kv * p.dec_head_dim
    add(EMBEDDING_NAME, (p.dec_n_vocab, d), True, _H_DEC + "embed_tokens.weight", _M_EMBD)
    for i in range(p.dec_n_layer):
        g, h, m = f"dec.blk.{i}.", f"{_H_DEC}layers.{i}.", f"layers.{i}."
        add(g + "attn_norm.weight", (d,), False, h + "input_layernorm.weight", m + "attention_norm.weight")
        add(
            g + "attn_q.weight",
            (q_dec, d),
            True,
            h + "self_attn.q_proj.weight",
            m + "attention.wq.weight",
            p.dec_n_head,
        )
        add(
            g + "attn_k.weight",
            (kv_dec, d),
            True,
            h + "self_attn.k_proj.weight",
            m + "attention.wk.weight",
            p.dec_n_head_kv,
        )
        add(g + "attn_v.weight", (kv_dec, d), True, h + "self_attn.v_proj.weight", m + "attention.wv.weight")
        add(g + "attn_out.weight", (d, q_dec), True, h + "self_attn.o_proj.weight", m + "attention.wo.weight")
        add(g + "ffn_norm.weight", (d,), False, h + "post_attention_layernorm.weight", m + "ffn_norm.weight")
        add(
            g + "ada_1.weight",
            (ada_dim, d),
            False,
            h + "ada_rms_norm.linear1.weight",
            m + "ada_rms_norm_t_cond.0.weight",
        )
        add(
            g + "ada_2.weight",
            (d, ada_dim),
            False,
            h + "ada_rms_norm.linear2.weight",
            m + "ada_rms_norm_t_cond.2.weight",
        )
        add(
            g + "ffn_gate.weight",
            (p.dec_n_ff, d),
            True,
            h + "mlp.gate_proj.weight",
            m + "feed_forward.w1.weight",
        )
        add(
            g + "ffn_up.weight", (p.dec_n_ff, d), True, h + "mlp.up_proj.weight", m + "feed_forward.w3.weight"
        )
        add(
            g + "ffn_down.weight",
            (d, p.dec_n_ff),
            True,
            h + "mlp.down_proj.weight",
            m + "feed_forward.w2.weight",
        )
    add("dec.norm.weight", (d,), False, _H_DEC + "norm.weight", "norm.weight")
    return specs


def ada_source_name(layout: Layout) -> str:
    """Checkpoint name of decoder layer 0's first ada-norm weight ([ada_dim, n_embd])."""
    return (
        "layers.0.ada_rms_norm_t_cond.0.weight"
        if layout == "mistral"
        else _H_DEC + "layers.0.ada_rms_norm.linear1.weight"
    )


def rope_row_permutation(n_rows: int, n_heads: int) -> np.ndarray:
    """Row order that turns interleaved-pair RoPE rows (Mistral) into rotate-half NeoX rows (HF).

    Within each head of ``head_dim`` rows, NeoX row ``t * head_dim/2 + i`` is interleaved row ``2 i + t``.
    """
    head_dim = n_rows // n_heads
    half = head_dim // 2
    t, i = np.meshgrid(np.arange(2), np.arange(half), indexing="ij")  # [2, half]
    within = (2 * i + t).reshape(-1)
    return (np.arange(n_heads)[:, None] * head_dim + within[None, :]).reshape(-1)
