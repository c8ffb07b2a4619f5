"""Tiny synthetic Voxtral Realtime checkpoints in both layouts, built with numpy only (no torch).

The HF copy holds float32 values that are exactly representable in bfloat16, so the Mistral copy
(stored as BF16, Q/K rows re-interleaved, names as in Mistral's release) holds the same model.
"""

from __future__ import annotations

import base64
import json
import re
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

N_SPECIAL = 1000


@dataclass(frozen=True)
class Dims:
    n_mel: int = 128
    enc_embd: int = 16
    enc_layers: int = 2
    enc_heads: int = 2
    enc_head_dim: int = 8
    enc_ff: int = 24
    dec_embd: int = 16
    dec_layers: int = 2
    dec_heads: int = 2
    dec_kv_heads: int = 1
    dec_head_dim: int = 8
    dec_ff: int = 24
    n_vocab: int = N_SPECIAL + 10
    ada_dim: int = 4


def write_safetensors(path: Path, tensors: dict[str, tuple[str, np.ndarray]]) -> None:
    """Minimal safetensors writer: name -> (dtype name, array); BF16 arrays are uint16 bit patterns."""
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    blobs: list[bytes] = []
    offset = 0
    for name, (dtype, array) in tensors.items():
        blob = np.ascontiguousarray(array).tobytes()
        header[name] = {
            "dtype": dtype,
            "shape": list(array.shape),
            "data_offsets": [offset, offset + len(blob)],
        }
        blobs.append(blob)
        offset += len(blob)
    header_bytes = json.dumps(header).encode()
    header_bytes += b" " * (-len(header_bytes) % 8)
    with path.open("wb") as f:
        f.write(struct.pack("<Q", len(header_bytes)))
        f.write(header_bytes)
        for blob in blobs:
            f.write(blob)


def read_safetensors_header(path: Path) -> dict[str, dict]:
    with path.open("rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        return json.loads(f.read(n))


def bf16_exact(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Random float32 values whose low 16 bits are zero (exact in bfloat16)."""
    values = rng.standard_normal(shape).astype(np.float32)
    return (values.view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)


def hf_state_dict(d: Dims, seed: int = 0) -> dict[str, np.ndarray]:
    """save_pretrained-style names -> float32 arrays (PyTorch shapes)."""
    rng = np.random.default_rng(seed)
    sd: dict[str, np.ndarray] = {}
    e, q = d.enc_embd, d.enc_heads * d.enc_head_dim
    sd["audio_tower.embedder.conv1.weight"] = bf16_exact(rng, (e, d.n_mel, 3))
    sd["audio_tower.embedder.conv1.bias"] = bf16_exact(rng, (e,))
    sd["audio_tower.embedder.conv2.weight"] = bf16_exact(rng, (e, e, 3))
    sd["audio_tower.embedder.conv2.bias"] = bf16_exact(rng, (e,))
    for i in range(d.enc_layers):
        p = f"audio_tower.layers.{i}."
        shapes = {
            "self_attn_layer_norm.weight": (e,),
            "self_attn.q_proj.weight": (q, e),
            "self_attn.q_proj.bias": (q,),
            "self_attn.k_proj.weight": (q, e),
            "self_attn.v_proj.weight": (q, e),
            "self_attn.v_proj.bias": (q,),
            "self_attn.o_proj.weight": (e, q),
            "self_attn.o_proj.bias": (e,),
            "final_layer_norm.weight": (e,),
            "mlp.gate_proj.weight": (d.enc_ff, e),
            "mlp.up_proj.weight": (d.enc_ff, e),
            "mlp.down_proj.weight": (e, d.enc_ff),
            "mlp.down_proj.bias": (e,),
        }
        for name, shape in shapes.items():
            sd[p + name] = bf16_exact(rng, shape)
    sd["audio_tower.norm.weight"] = bf16_exact(rng, (e,))
    t = d.dec_embd
    sd["multi_modal_projector.linear_1.weight"] = bf16_exact(rng, (t, 4 * e))
    sd["multi_modal_projector.linear_2.weight"] = bf16_exact(rng, (t, t))
    sd["language_model.model.embed_tokens.weight"] = bf16_exact(rng, (d.n_vocab, t))
    qd, kv = d.dec_heads * d.dec_head_dim, d.dec_kv_heads * d.dec_head_dim
    for i in range(d.dec_layers):
        p = f"language_model.model.layers.{i}."
        shapes = {
            "input_layernorm.weight": (t,),
            "self_attn.q_proj.weight": (qd, t),
            "self_attn.k_proj.weight": (kv, t),
            "self_attn.v_proj.weight": (kv, t),
            "self_attn.o_proj.weight": (t, qd),
            "post_attention_layernorm.weight": (t,),
            "ada_rms_norm.linear1.weight": (d.ada_dim, t),
            "ada_rms_norm.linear2.weight": (t, d.ada_dim),
            "mlp.gate_proj.weight": (d.dec_ff, t),
            "mlp.up_proj.weight": (d.dec_ff, t),
            "mlp.down_proj.weight": (t, d.dec_ff),
        }
        for name, shape in shapes.items():
            sd[p + name] = bf16_exact(rng, shape)
    sd["language_model.model.norm.weight"] = bf16_exact(rng, (t,))
    return sd


def hf_config(d: Dims) -> dict:
    return {
        "architectures": ["VoxtralRealtimeForConditionalGeneration"],
        "model_type": "voxtral_realtime",
        "audio_length_per_tok": 8,
        "default_num_delay_tokens": 6,
        "downsample_factor": 4,
        "audio_config": {
            "model_type": "voxtral_realtime_encoder",
            "hidden_size": d.enc_embd,
            "num_hidden_layers": d.enc_layers,
            "num_attention_heads": d.enc_heads,
            "head_dim": d.enc_head_dim,
            "intermediate_size": d.enc_ff,
            "num_mel_bins": d.n_mel,
            "rms_norm_eps": 1e-5,
            "rope_parameters": {"rope_theta": 1e6, "rope_type": "default"},
            "sliding_window": 750,
        },
        "text_config": {
            "model_type": "voxtral_realtime_text",
            "hidden_size": d.dec_embd,
            "num_hidden_layers": d.dec_layers,
            "num_attention_heads": d.dec_heads,
            "num_key_value_heads": d.dec_kv_heads,
            "head_dim": d.dec_head_dim,
            "intermediate_size": d.dec_ff,
            "max_position_embeddings": 131072,
            "rms_norm_eps": 1e-5,
            "rope_parameters": {"rope_theta": 1e6, "rope_type": "default"},
            "sliding_window": 8192,
            "vocab_size": d.n_vocab,
        },
    }


def mistral_params(d: Dims) -> dict:
    return {
        "dim": d.dec_embd,
        "n_layers": d.dec_layers,
        "head_dim": d.dec_head_dim,
        "hidden_dim": d.dec_ff,
        "n_heads": d.dec_heads,
        "n_kv_heads": d.dec_kv_heads,
        "rope_theta": 1e6,
        "norm_eps": 1e-5,
        "vocab_size": d.n_vocab,
        "tied_embeddings": True,
        "sliding_window": "8192",
        "max_seq_len": 131072,
        "ada_rms_norm_t_cond": True,
        "ada_rms_norm_t_cond_dim": d.ada_dim,
        "multimodal": {
            "whisper_model_args": {
                "encoder_args": {
                    "audio_encoding_args": {
                        "sampling_rate": 16000,
                        "frame_rate": 12.5,
                        "num_mel_bins": d.n_mel,
                        "hop_length": 160,
                        "window_size": 400,
                        "global_log_mel_max": 1.5,
                    },
                    "dim": d.enc_embd,
                    "n_layers": d.enc_layers,
                    "head_dim": d.enc_head_dim,
                    "hidden_dim": d.enc_ff,
                    "n_heads": d.enc_heads,
                    "n_kv_heads": d.enc_heads,
                    "rope_theta": 1e6,
                    "norm_eps": 1e-5,
                    "sliding_window": 750,
                },
                "downsample_args": {"downsample_factor": 4},
            }
        },
    }


SPECIAL_TOKENS = (
    ["<unk>", "<s>", "</s>"] + [f"[CTRL_{i}]" for i in range(3, 32)] + ["[STREAMING_PAD]", "[STREAMING_WORD]"]
)


def tekken(n_normal: int = 12, specials: list[str] | None = None) -> dict:
    specials = SPECIAL_TOKENS if specials is None else specials
    return {
        "config": {
            "default_num_special_tokens": N_SPECIAL,
            "default_vocab_size": N_SPECIAL + n_normal,
            "version": "v13",
        },
        "special_tokens": [{"rank": i, "token_str": s, "is_control": True} for i, s in enumerate(specials)],
        "vocab": [
            {
                "rank": r,
                "token_bytes": base64.b64encode(bytes([65 + r]) * (1 + r % 3)).decode(),
                "token_str": None,
            }
            for r in range(n_normal)
        ],
        "audio": {"frame_rate": 12.5, "transcription_delay_ms": 960, "streaming_n_left_pad_tokens": 16},
    }


_TO_MISTRAL = [
    (
        r"^audio_tower\.embedder\.conv(\d)\.(weight|bias)$",
        lambda m: f"{_ENC}conv_layers.{int(m[1]) - 1}.conv.{m[2]}",
    ),
    (r"^audio_tower\.norm\.weight$", lambda m: f"{_ENC}transformer.norm.weight"),
    (r"^audio_tower\.layers\.(\d+)\.(.*)$", lambda m: f"{_ENC}transformer.layers.{m[1]}.{_LAYER[m[2]]}"),
    (r"^multi_modal_projector\.linear_(\d)\.weight$", lambda m: f"{_PROJ}{2 * (int(m[1]) - 1)}.weight"),
    (
        r"^language_model\.model\.embed_tokens\.weight$",
        lambda m: "mm_streams_embeddings.embedding_module.tok_embeddings.weight",
    ),
    (r"^language_model\.model\.norm\.weight$", lambda m: "norm.weight"),
    (r"^language_model\.model\.layers\.(\d+)\.(.*)$", lambda m: f"layers.{m[1]}.{_LAYER[m[2]]}"),
]
_ENC = "mm_streams_embeddings.embedding_module.whisper_encoder."
_PROJ = "mm_streams_embeddings.embedding_module.audio_language_projection."
_LAYER = {
    "self_attn_layer_norm.weight": "attention_norm.weight",
    "input_layernorm.weight": "attention_norm.weight",
    "final_layer_norm.weight": "ffn_norm.weight",
    "post_attention_layernorm.weight": "ffn_norm.weight",
    "ada_rms_norm.linear1.weight": "ada_rms_norm_t_cond.0.weight",
    "ada_rms_norm.linear2.weight": "ada_rms_norm_t_cond.2.weight",
    **{f"self_attn.{x}_proj.{k}": f"attention.w{x}.{k}" for x in "qkvo" for k in ("weight", "bias")},
    **{
        f"mlp.{h}_proj.{k}": f"feed_forward.{m}.{k}"
        for h, m in (("gate", "w1"), ("up", "w3"), ("down", "w2"))
        for k in ("weight", "bias")
    },
}


def to_interleaved(rows: np.ndarray, n_heads: int) -> np.ndarray:
    """NeoX (rotate-half) rows -> Mistral's interleaved-pair rows, per head."""
    head_dim = rows.shape[0] // n_heads
    rest = rows.shape[1:]
    return rows.reshape(n_heads, 2, head_dim // 2, *rest).swapaxes(1, 2).reshape(rows.shape)


def mistral_state_dict(hf: dict[str, np.ndarray], d: Dims) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for name, value in hf.items():
        new = next(fn(m) for pat, fn in _TO_MISTRAL if (m := re.match(pat, name)))
        if name.startswith("audio_tower.") and (".q_proj." in name or ".k_proj." in name):
            value = to_interleaved(value, d.enc_heads)
        elif ".q_proj." in name:
            value = to_interleaved(value, d.dec_heads)
        elif ".k_proj." in name:
            value = to_interleaved(value, d.dec_kv_heads)
        out[new] = value
    return out


def to_bf16_bits(values: np.ndarray) -> np.ndarray:
    return (values.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)


def write_hf(path: Path, d: Dims, sd: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """An HF-layout directory at `path` (F32 single file); returns its state dict."""
    sd = hf_state_dict(d) if sd is None else sd
    path.mkdir(parents=True, exist_ok=True)
    (path / "config.json").write_text(json.dumps(hf_config(d)))
    (path / "tekken.json").write_text(json.dumps(tekken()))
    write_safetensors(path / "model.safetensors", {k: ("F32", v) for k, v in sd.items()})
    return sd


def write_mistral(path: Path, d: Dims, hf: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """A Mistral-layout directory at `path` (BF16 weights); returns its float32 state dict."""
    sd = mistral_state_dict(hf_state_dict(d) if hf is None else hf, d)
    path.mkdir(parents=True, exist_ok=True)
    (path / "params.json").write_text(json.dumps(mistral_params(d)))
    (path / "tekken.json").write_text(json.dumps(tekken()))
    write_safetensors(
        path / "consolidated.safetensors", {k: ("BF16", to_bf16_bits(v)) for k, v in sd.items()}
    )
    return sd
