"""GGUF metadata of a FastConformer RNN-T file (engine/GGUF.md "FastConformer RNN-T files" / Metadata)."""

from __future__ import annotations

from gguf import GGUFValueType, GGUFWriter

from .fastconformer_params import FastConformerParams
from .piece_vocab import PieceVocab

ARCH = "fastconformer_rnnt"
FORMAT_VERSION = 1
_TITLES = {
    "nemotron_asr_streaming": "Nemotron ASR Streaming",
    "nemotron3_5_asr": "Nemotron 3.5 ASR Streaming",
    "parakeet_eou": "Parakeet Realtime EOU",
}


def add_fastconformer_metadata(
    writer: GGUFWriter, p: FastConformerParams, vocab: PieceVocab, file_type: int
) -> None:
    """Every key of the layout (general.architecture is added by GGUFWriter)."""
    writer.add_name(
        f"{_TITLES[p.variant]} (FastConformer {p.n_layer}x{p.n_embd}, RNN-T {p.dec_n_layer}x{p.dec_n_embd})"
    )
    writer.add_file_type(int(file_type))
    f = "fastconformer."
    writer.add_uint32(f + "format_version", FORMAT_VERSION)
    writer.add_string(f + "variant", p.variant)
    u32 = {
        "audio.sample_rate": p.sample_rate,
        "audio.n_fft": p.n_fft,
        "audio.win_length": p.win_length,
        "audio.hop_length": p.hop_length,
        "audio.n_mel": p.n_mel,
        "encoder.n_embd": p.n_embd,
        "encoder.n_layer": p.n_layer,
        "encoder.n_head": p.n_head,
        "encoder.n_ff": p.n_ff,
        "encoder.conv_kernel": p.conv_kernel,
        "encoder.subsampling_factor": p.sub_factor,
        "encoder.subsampling_channels": p.sub_channels,
        "encoder.subsampling_kernel": p.sub_kernel,
        "encoder.subsampling_stride": p.sub_stride,
        "encoder.left_context": p.left_context,
        "decoder.n_embd": p.dec_n_embd,
        "decoder.n_layer": p.dec_n_layer,
        "joint.n_embd": p.joint_n_embd,
        "n_vocab": p.n_vocab,
        "blank_id": p.blank_id,
        "max_symbols_per_step": p.max_symbols_per_step,
    }
    f32 = {
        "audio.preemphasis": p.preemphasis,
        "audio.log_guard": p.log_guard,
        "encoder.norm_eps": p.norm_eps,
        "encoder.xscale": p.xscale,
    }
    for key, value in u32.items():
        writer.add_uint32(f + key, int(value))
    for key, value in f32.items():
        writer.add_float32(f + key, float(value))
    writer.add_string(f + "encoder.conv_norm", "layer_norm" if p.conv_norm == "layer_norm" else "batch_norm")
    writer.add_string(f + "joint.activation", p.joint_activation)
    _u32_array(writer, f + "encoder.lookaheads", p.lookaheads)
    if p.prompt is not None:
        writer.add_uint32(f + "prompt.n_prompts", p.prompt.n_prompts)
        writer.add_uint32(f + "prompt.n_ff", p.prompt.n_ff)
        writer.add_uint32(f + "prompt.default_id", p.prompt.default_id)
        writer.add_array(f + "prompt.names", p.prompt.names)
        _u32_array(writer, f + "prompt.ids", p.prompt.ids)
    t = "tokenizer.fastconformer."
    writer.add_array(t + "pieces", vocab.pieces)
    writer.add_key_value(t + "piece_types", vocab.types, GGUFValueType.ARRAY, sub_type=GGUFValueType.UINT8)
    writer.add_int32(t + "eou_id", vocab.eou_id)
    writer.add_int32(t + "eob_id", vocab.eob_id)


def _u32_array(writer: GGUFWriter, key: str, values: list[int]) -> None:
    writer.add_key_value(key, list(values), GGUFValueType.ARRAY, sub_type=GGUFValueType.UINT32)
