"""Model dimensions the benchmarks use: the real Voxtral Mini 4B Realtime and a ~quarter-size "mid".

``full`` is the real architecture (engine/GGUF.md "Metadata"). ``mid`` is about a quarter of it in
width and depth: encoder 8 x 320 (8 heads x 64, ff 1280), decoder 7 x 768 (8/2 heads x 128,
ff 2304), vocab 32768; same frontend, windows and ada width. Both are expressed as the converter's
``ModelParams`` so its metadata writer can be reused, and as ``transformers`` config dicts.
"""

from __future__ import annotations

from typing import Any

from captionist.convert.hparams import ModelParams

ADA_DIM = 32

_DIMS: dict[str, dict[str, int]] = {
    "full": dict(
        enc_n_embd=1280, enc_n_layer=32, enc_n_head=32, enc_head_dim=64, enc_n_ff=5120,
        dec_n_embd=3072, dec_n_layer=26, dec_n_head=32, dec_n_head_kv=8, dec_head_dim=128,
        dec_n_ff=9216, dec_n_vocab=131072,
    ),
    "mid": dict(
        enc_n_embd=320, enc_n_layer=8, enc_n_head=8, enc_head_dim=64, enc_n_ff=1280,
        dec_n_embd=768, dec_n_layer=7, dec_n_head=8, dec_n_head_kv=2, dec_head_dim=128,
        dec_n_ff=2304, dec_n_vocab=32768,
    ),
}  # fmt: skip
DIMS_CHOICES = tuple(_DIMS)


def model_params(dims: str) -> ModelParams:
    """The converter's ModelParams for ``full`` or ``mid`` (real frontend, windows and rope)."""
    if dims not in _DIMS:
        raise ValueError(f"unknown dims {dims!r}; choose one of {', '.join(_DIMS)}")
    return ModelParams(
        sample_rate=16000,
        n_fft=400,
        hop_length=160,
        n_mel=128,
        global_log_mel_max=1.5,
        mel_frames_per_token=8,
        downsample_factor=4,
        config_num_delay_tokens=6,
        enc_rms_eps=1e-5,
        enc_rope_theta=1e6,
        enc_sliding_window=750,
        dec_rms_eps=1e-5,
        dec_rope_theta=1e6,
        dec_sliding_window=8192,
        dec_max_position=131072,
        dec_ada_dim=ADA_DIM,
        **_DIMS[dims],
    )


def hf_config_dicts(dims: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(audio_config, text_config) keyword dicts for ``VoxtralRealtimeConfig`` with these dims."""
    p = model_params(dims)
    audio = dict(
        hidden_size=p.enc_n_embd,
        num_hidden_layers=p.enc_n_layer,
        num_attention_heads=p.enc_n_head,
        head_dim=p.enc_head_dim,
        intermediate_size=p.enc_n_ff,
        sliding_window=p.enc_sliding_window,
    )
    text = dict(
        hidden_size=p.dec_n_embd,
        num_hidden_layers=p.dec_n_layer,
        num_attention_heads=p.dec_n_head,
        num_key_value_heads=p.dec_n_head_kv,
        head_dim=p.dec_head_dim,
        intermediate_size=p.dec_n_ff,
        sliding_window=p.dec_sliding_window,
    )
    return audio, text
