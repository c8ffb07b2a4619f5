"""Hyper-parameters of a Voxtral Realtime checkpoint, read from HF ``config.json`` or Mistral ``params.json``.

The Mistral -> HF key correspondence follows transformers' ``convert_voxtral_realtime_weights_to_hf.py``;
fallbacks are the values transformers itself would use, so both layouts of one model give equal params.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import ConversionError

HF_MODEL_TYPE = "voxtral_realtime"


@dataclass(frozen=True)
class ModelParams:
    """Everything from the model config that goes into the GGUF (tokenizer-side values excluded)."""

    # audio frontend
    sample_rate: int
    n_fft: int
    hop_length: int
    n_mel: int
    global_log_mel_max: float
    mel_frames_per_token: int
    downsample_factor: int
    config_num_delay_tokens: int  # fallback when tekken.json has no transcription_delay_ms
    # encoder
    enc_n_embd: int
    enc_n_layer: int
    enc_n_head: int
    enc_head_dim: int
    enc_n_ff: int
    enc_rms_eps: float
    enc_rope_theta: float
    enc_sliding_window: int
    # decoder
    dec_n_embd: int
    dec_n_layer: int
    dec_n_head: int
    dec_n_head_kv: int
    dec_head_dim: int
    dec_n_ff: int
    dec_rms_eps: float
    dec_rope_theta: float
    dec_sliding_window: int
    dec_max_position: int
    dec_n_vocab: int
    dec_ada_dim: int | None  # None: take it from the ada-norm tensor shapes


def params_from_hf(config: dict[str, Any], preprocessor: dict[str, Any]) -> ModelParams:
    """ModelParams from a Hugging Face ``config.json`` (+ optional ``preprocessor_config.json``)."""
    model_type = config.get("model_type")
    if model_type != HF_MODEL_TYPE:
        raise ConversionError(
            f"config.json has model_type {model_type!r}; "
            f"only {HF_MODEL_TYPE!r} (Voxtral Realtime) is supported"
        )
    audio = _section(config, "audio_config", "config.json")
    text = _section(config, "text_config", "config.json")
    n_mel = _int(audio, "num_mel_bins", "config.json audio_config", 128)
    feature_size = _int(preprocessor, "feature_size", "preprocessor_config.json", n_mel)
    if feature_size != n_mel:
        raise ConversionError(
            f"preprocessor_config.json feature_size {feature_size} != audio_config num_mel_bins {n_mel}"
        )
    n_fft = _int(preprocessor, "n_fft", "preprocessor_config.json", 400)
    win_length = _int(preprocessor, "win_length", "preprocessor_config.json", n_fft)
    if win_length != n_fft:
        raise ConversionError(
            f"preprocessor_config.json win_length {win_length} != n_fft {n_fft} (unsupported)"
        )

    enc_n_embd = _int(audio, "hidden_size", "config.json audio_config", 1280)
    enc_n_head = _int(audio, "num_attention_heads", "config.json audio_config", 32)
    dec_n_embd = _int(text, "hidden_size", "config.json text_config", 3072)
    dec_n_head = _int(text, "num_attention_heads", "config.json text_config", 32)
    dec_max_position = _int(text, "max_position_embeddings", "config.json text_config", 131072)
    return ModelParams(
        sample_rate=_int(preprocessor, "sampling_rate", "preprocessor_config.json", 16000),
        n_fft=n_fft,
        hop_length=_int(preprocessor, "hop_length", "preprocessor_config.json", 160),
        n_mel=n_mel,
        global_log_mel_max=_float(preprocessor, "global_log_mel_max", "preprocessor_config.json", 1.5),
        mel_frames_per_token=_int(config, "audio_length_per_tok", "config.json", 8),
        downsample_factor=_int(config, "downsample_factor", "config.json", 4),
        config_num_delay_tokens=_int(config, "default_num_delay_tokens", "config.json", 6),
        enc_n_embd=enc_n_embd,
        enc_n_layer=_int(audio, "num_hidden_layers", "config.json audio_config", 32),
        enc_n_head=enc_n_head,
        enc_head_dim=_int(audio, "head_dim", "config.json audio_config", 64),
        enc_n_ff=_int(audio, "intermediate_size", "config.json audio_config", 5120),
        enc_rms_eps=_float(audio, "rms_norm_eps", "config.json audio_config", 1e-5),
        enc_rope_theta=_hf_rope_theta(audio, "config.json audio_config", 10000.0),
        enc_sliding_window=_window(audio, "config.json audio_config", 750, 1 << 31),
        dec_n_embd=dec_n_embd,
        dec_n_layer=_int(text, "num_hidden_layers", "config.json text_config", 26),
        dec_n_head=dec_n_head,
        dec_n_head_kv=_int(text, "num_key_value_heads", "config.json text_config", 8),
        dec_head_dim=_int(text, "head_dim", "config.json text_config", 128),
        dec_n_ff=_int(text, "intermediate_size", "config.json text_config", 9216),
        dec_rms_eps=_float(text, "rms_norm_eps", "config.json text_config", 1e-5),
        dec_rope_theta=_hf_rope_theta(text, "config.json text_config", 1e6),
        dec_sliding_window=_window(text, "config.json text_config", 8192, dec_max_position),
        dec_max_position=dec_max_position,
        dec_n_vocab=_int(text, "vocab_size", "config.json text_config", 131072),
        dec_ada_dim=None,
    )


def params_from_mistral(params: dict[str, Any]) -> ModelParams:
    """ModelParams from Mistral's ``params.json`` (``multimodal.whisper_model_args`` holds the encoder)."""
    where = "params.json"
    multimodal = _section(params, "multimodal", where)
    whisper = _section(multimodal, "whisper_model_args", where + " multimodal")
    enc = _section(whisper, "encoder_args", where + " whisper_model_args")
    if params.get("ada_rms_norm_t_cond") is not True:
        raise ConversionError(
            "params.json has no ada_rms_norm_t_cond (delay conditioning): not a Voxtral Realtime model"
        )
    audio = enc.get("audio_encoding_args") or {}
    downsample = whisper.get("downsample_args") or {}
    if not isinstance(audio, dict) or not isinstance(downsample, dict):
        raise ConversionError("params.json audio_encoding_args / downsample_args must be JSON objects")
    ew = where + " encoder_args"
    aw = ew + " audio_encoding_args"

    sample_rate = _int(audio, "sampling_rate", aw, 16000)
    n_fft = _int(audio, "window_size", aw, 400)
    n_fft = _int(audio, "n_fft", aw, n_fft)
    hop_length = _int(audio, "hop_length", aw, 160)
    frame_rate = _float(audio, "frame_rate", aw, 0.0)
    frames_per_token = 8
    if frame_rate > 0:
        exact = sample_rate / frame_rate / hop_length
        frames_per_token = round(exact)
        if frames_per_token < 1 or abs(exact - frames_per_token) > 1e-6:
            raise ConversionError(f"params.json frame_rate {frame_rate} is not a whole number of mel frames")

    enc_n_embd = _int(enc, "dim", ew)
    enc_n_head = _int(enc, "n_heads", ew)
    dec_n_embd = _int(params, "dim", where)
    dec_n_head = _int(params, "n_heads", where)
    dec_max_position = _int(params, "max_seq_len", where, 131072)
    ada_dim = params.get("ada_rms_norm_t_cond_dim")
    return ModelParams(
        sample_rate=sample_rate,
        n_fft=n_fft,
        hop_length=hop_length,
        n_mel=_int(audio, "num_mel_bins", aw, 128),
        global_log_mel_max=_float(audio, "global_log_mel_max", aw, 1.5),
        mel_frames_per_token=frames_per_token,
        downsample_factor=_int(downsample, "downsample_factor", where + " downsample_args", 4),
        config_num_delay_tokens=6,
        enc_n_embd=enc_n_embd,
        enc_n_layer=_int(enc, "n_layers", ew),
        enc_n_head=enc_n_head,
        enc_head_dim=_int(enc, "head_dim", ew, enc_n_embd // enc_n_head),
        enc_n_ff=_int(enc, "hidden_dim", ew),
        enc_rms_eps=_float(enc, "norm_eps", ew, 1e-5),
        enc_rope_theta=_float(enc, "rope_theta", ew, 10000.0),
        enc_sliding_window=_window(enc, ew, 750, 1 << 31),
        dec_n_embd=dec_n_embd,
        dec_n_layer=_int(params, "n_layers", where),
        dec_n_head=dec_n_head,
        dec_n_head_kv=_int(params, "n_kv_heads", where, dec_n_head),
        dec_head_dim=_int(params, "head_dim", where, dec_n_embd // dec_n_head),
        dec_n_ff=_int(params, "hidden_dim", where),
        dec_rms_eps=_float(params, "norm_eps", where, 1e-5),
        dec_rope_theta=_float(params, "rope_theta", where, 1e6),
        dec_sliding_window=_window(params, where, dec_max_position, dec_max_position),
        dec_max_position=dec_max_position,
        dec_n_vocab=_int(params, "vocab_size", where),
        dec_ada_dim=None if ada_dim is None else _int(params, "ada_rms_norm_t_cond_dim", where),
    )


def _section(parent: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    value = parent.get(key)
    if not isinstance(value, dict):
        raise ConversionError(f"{where} has no {key!r} section: not a Voxtral Realtime config")
    return value


_MISSING = object()


def _int(d: dict[str, Any], key: str, where: str, default: Any = _MISSING) -> int:
    value = d.get(key)
    if value is None:
        if default is _MISSING:
            raise ConversionError(f"{where} is missing {key!r}")
        return int(default)
    try:
        result = int(value)  # params.json may hold numbers as strings
    except (TypeError, ValueError):
        raise ConversionError(f"{where} {key!r} is {value!r}, expected an integer") from None
    if isinstance(value, float) and value != result or result <= 0:
        raise ConversionError(f"{where} {key!r} is {value!r}, expected a positive integer")
    return result


def _float(d: dict[str, Any], key: str, where: str, default: float) -> float:
    value = d.get(key)
    if value is None:
        return default
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ConversionError(f"{where} {key!r} is {value!r}, expected a number") from None


def _window(d: dict[str, Any], where: str, default: int, unlimited: int) -> int:
    """Sliding window: `default` when the key is absent, `unlimited` when it is null (no window)."""
    if "sliding_window" in d and d["sliding_window"] is None:
        return unlimited
    return _int(d, "sliding_window", where, default)


def _hf_rope_theta(section: dict[str, Any], where: str, default: float) -> float:
    rope = section.get("rope_parameters")
    if isinstance(rope, dict) and rope.get("rope_theta") is not None:
        return _float(rope, "rope_theta", where + " rope_parameters", default)
    return _float(section, "rope_theta", where, default)
