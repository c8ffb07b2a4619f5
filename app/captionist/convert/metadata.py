"""GGUF metadata (engine/GGUF.md "Metadata"): hyper-parameters, streaming constants and the tekken table."""

from __future__ import annotations

from dataclasses import dataclass

from gguf import GGUFValueType, GGUFWriter

from .errors import ConversionError
from .hparams import ModelParams
from .tekken import TekkenVocab

FORMAT_VERSION = 1
N_RIGHT_PAD_EXTRA_TOKENS = 10  # mistral-common OFFLINE_STREAMING_BUFFER_TOKENS
TIME_EMBEDDING_THETA = 10000.0
DEFAULT_N_LEFT_PAD_TOKENS = 32


@dataclass(frozen=True)
class StreamingDefaults:
    default_num_delay_tokens: int
    n_left_pad_tokens: int


def resolve_streaming(p: ModelParams, vocab: TekkenVocab) -> StreamingDefaults:
    """Default delay (tekken ``transcription_delay_ms`` / token ms, else the config's) and left pad."""
    delay = p.config_num_delay_tokens
    if vocab.transcription_delay_ms is not None:
        token_ms = 1000.0 * p.mel_frames_per_token * p.hop_length / p.sample_rate
        if vocab.frame_rate:
            token_ms = 1000.0 / vocab.frame_rate
        exact = vocab.transcription_delay_ms / token_ms
        delay = round(exact)
        if abs(exact - delay) > 1e-6 or delay < 0:
            raise ConversionError(
                f"tekken.json transcription_delay_ms {vocab.transcription_delay_ms} is not a whole number "
                f"of {token_ms:g} ms audio tokens"
            )
    left_pad = vocab.n_left_pad_tokens if vocab.n_left_pad_tokens is not None else DEFAULT_N_LEFT_PAD_TOKENS
    return StreamingDefaults(default_num_delay_tokens=delay, n_left_pad_tokens=left_pad)


def add_metadata(
    writer: GGUFWriter,
    p: ModelParams,
    ada_dim: int,
    vocab: TekkenVocab,
    streaming: StreamingDefaults,
    file_type: int,
) -> None:
    """Add every metadata key of engine/GGUF.md (general.architecture is added by GGUFWriter)."""
    writer.add_name(
        f"Voxtral Realtime (encoder {p.enc_n_layer}x{p.enc_n_embd}, decoder {p.dec_n_layer}x{p.dec_n_embd})"
    )
    writer.add_file_type(int(file_type))
    u32 = {
        "voxtral.format_version": FORMAT_VERSION,
        "voxtral.audio.sample_rate": p.sample_rate,
        "voxtral.audio.n_fft": p.n_fft,
        "voxtral.audio.hop_length": p.hop_length,
        "voxtral.audio.n_mel": p.n_mel,
        "voxtral.audio.mel_frames_per_token": p.mel_frames_per_token,
        "voxtral.audio.downsample_factor": p.downsample_factor,
        "voxtral.audio.n_left_pad_tokens": streaming.n_left_pad_tokens,
        "voxtral.audio.n_right_pad_extra_tokens": N_RIGHT_PAD_EXTRA_TOKENS,
        "voxtral.default_num_delay_tokens": streaming.default_num_delay_tokens,
        "voxtral.encoder.n_embd": p.enc_n_embd,
        "voxtral.encoder.n_layer": p.enc_n_layer,
        "voxtral.encoder.n_head": p.enc_n_head,
        "voxtral.encoder.head_dim": p.enc_head_dim,
        "voxtral.encoder.n_ff": p.enc_n_ff,
        "voxtral.encoder.sliding_window": p.enc_sliding_window,
        "voxtral.decoder.n_embd": p.dec_n_embd,
        "voxtral.decoder.n_layer": p.dec_n_layer,
        "voxtral.decoder.n_head": p.dec_n_head,
        "voxtral.decoder.n_head_kv": p.dec_n_head_kv,
        "voxtral.decoder.head_dim": p.dec_head_dim,
        "voxtral.decoder.n_ff": p.dec_n_ff,
        "voxtral.decoder.sliding_window": p.dec_sliding_window,
        "voxtral.decoder.max_position": p.dec_max_position,
        "voxtral.decoder.n_vocab": p.dec_n_vocab,
        "voxtral.decoder.ada_dim": ada_dim,
        "tokenizer.tekken.n_special": vocab.n_special,
        "tokenizer.tekken.bos_id": vocab.bos_id,
        "tokenizer.tekken.eos_id": vocab.eos_id,
        "tokenizer.tekken.streaming_pad_id": vocab.streaming_pad_id,
        "tokenizer.tekken.streaming_word_id": vocab.streaming_word_id,
    }
    for key, value in u32.items():
        writer.add_uint32(key, int(value))
    f32 = {
        "voxtral.audio.global_log_mel_max": p.global_log_mel_max,
        "voxtral.time_embedding_theta": TIME_EMBEDDING_THETA,
        "voxtral.encoder.rms_eps": p.enc_rms_eps,
        "voxtral.encoder.rope_theta": p.enc_rope_theta,
        "voxtral.decoder.rms_eps": p.dec_rms_eps,
        "voxtral.decoder.rope_theta": p.dec_rope_theta,
    }
    for key, value in f32.items():
        writer.add_float32(key, float(value))
    if vocab.token_bytes:
        writer.add_key_value(
            "tokenizer.tekken.token_bytes",
            vocab.token_bytes,
            GGUFValueType.ARRAY,
            sub_type=GGUFValueType.UINT8,
        )
    writer.add_key_value(
        "tokenizer.tekken.token_offsets",
        vocab.token_offsets,
        GGUFValueType.ARRAY,
        sub_type=GGUFValueType.UINT32,
    )
