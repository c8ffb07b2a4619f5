"""Write one of our Voxtral Realtime GGUF files in transcribe.cpp's own GGUF layout (its 0.4.x loader).

    python tools/export_transcribe_cpp_gguf.py OURS.gguf THEIRS.gguf [--id-vocab]

For the side-by-side speed bench (bench/bench_vs_transcribe_cpp.py): both engines then run the very
same weights. Works for any of our file types (F32, F16, BF16, Q8_0, Q4_K, Q6_K, ...): every tensor's
bytes are copied as they are, quantized ones included (transcribe.cpp has no quantizer of its own).
The layouts agree where it matters — both store Linear weights as ggml [in, out], Q/K rows in the NeoX
RoPE order, the conv kernels as [k, in, out] and the ada-norm MLP as two plain matrices — so
matrices only change names. What differs (engine/GGUF.md vs transcribe.cpp's
``src/arch/voxtral_realtime/weights.cpp``):

- names: ``enc.blk.N.attn_q`` -> ``enc.blocks.N.attn.q``, ``attn_out`` -> ``attn.out`` (encoder) /
  ``attn.o`` (decoder), ``ada_1`` -> ``ada.linear_1``, ``enc.conv1`` -> ``enc.conv.0``, ``enc.norm`` ->
  ``enc.final_norm``, ``dec.norm`` -> ``dec.output_norm``, ``audio.*`` -> ``frontend.*``;
- the mel filterbank is transposed: ours is ggml [n_mel, n_freq] (row f = frequency bin f),
  transcribe.cpp reads ``frontend.mel_filterbank`` as n_mel rows of n_freq values (librosa's
  order). It is F32 in every file type, so the transpose never touches quantized bytes;
- ``dec.time_embed.inv_freq`` (F32 [n_embd/2]) is added: transcribe.cpp reads the delay embedding's
  frequencies from the file, we compute them from ``voxtral.time_embedding_theta``;
- metadata moves to ``stt.voxtral_realtime.*`` / ``stt.frontend.*`` keys, and the tokenizer from our
  raw-bytes tekken table to a GPT-2 style byte-level vocabulary (``tokenizer.ggml.model`` ``gpt2``,
  ``pre`` ``tekken``; control tokens typed CONTROL, merges rebuilt from the tekken ranks);
- transcribe.cpp fixes the left pad at 32 tokens and the right pad at delay + 1 + 10 tokens; a file
  whose ``voxtral.audio.n_left_pad_tokens`` / ``n_right_pad_extra_tokens`` differ is refused.

transcribe.cpp 0.4.1 returns text only (no token ids) for this family. ``--id-vocab`` writes each
normal token's text as ``[ID]`` instead of its bytes, so its transcript spells the emitted ids
(control tokens are dropped from text by both engines): bench/agree_vs_transcribe_cpp.py compares
ids that way. Weights are the same either way.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from gguf import GGMLQuantizationType, GGUFReader, GGUFValueType, GGUFWriter

ARCH = "voxtral_realtime"
TOKEN_TYPE_NORMAL = 1
TOKEN_TYPE_CONTROL = 3
LEFT_PAD_TOKENS = 32  # transcribe.cpp: tekken streaming_n_left_pad_tokens, fixed in its code
RIGHT_PAD_EXTRA_TOKENS = 10  # transcribe.cpp: mistral-common OFFLINE_STREAMING_BUFFER_TOKENS, fixed
ENCODER_MAX_POSITIONS = 1500  # HF audio_config.max_position_embeddings; we do not store it

# Per-layer renames, ours -> transcribe.cpp (the suffix after "enc.blk.N." / "dec.blk.N.").
_ENC_LAYER = {
    "attn_norm.weight": "norm_attn.weight",
    "attn_q.weight": "attn.q.weight",
    "attn_q.bias": "attn.q.bias",
    "attn_k.weight": "attn.k.weight",
    "attn_v.weight": "attn.v.weight",
    "attn_v.bias": "attn.v.bias",
    "attn_out.weight": "attn.out.weight",
    "attn_out.bias": "attn.out.bias",
    "ffn_norm.weight": "norm_ffn.weight",
    "ffn_gate.weight": "ffn.gate.weight",
    "ffn_up.weight": "ffn.up.weight",
    "ffn_down.weight": "ffn.down.weight",
    "ffn_down.bias": "ffn.down.bias",
}
_DEC_LAYER = {
    "attn_norm.weight": "norm_attn.weight",
    "attn_q.weight": "attn.q.weight",
    "attn_k.weight": "attn.k.weight",
    "attn_v.weight": "attn.v.weight",
    "attn_out.weight": "attn.o.weight",
    "ffn_norm.weight": "norm_ffn.weight",
    "ada_1.weight": "ada.linear_1.weight",
    "ada_2.weight": "ada.linear_2.weight",
    "ffn_gate.weight": "ffn.gate.weight",
    "ffn_up.weight": "ffn.up.weight",
    "ffn_down.weight": "ffn.down.weight",
}
_TOP = {
    "audio.mel_filters": "frontend.mel_filterbank",
    "audio.window": "frontend.window",
    "enc.conv1.weight": "enc.conv.0.weight",
    "enc.conv1.bias": "enc.conv.0.bias",
    "enc.conv2.weight": "enc.conv.1.weight",
    "enc.conv2.bias": "enc.conv.1.bias",
    "enc.norm.weight": "enc.final_norm.weight",
    "proj.linear_1.weight": "proj.linear_1.weight",
    "proj.linear_2.weight": "proj.linear_2.weight",
    "dec.token_embd.weight": "dec.token_embd.weight",
    "dec.norm.weight": "dec.output_norm.weight",
}


class ExportError(ValueError):
    """A source file this exporter cannot express in transcribe.cpp's layout; the message says why."""


def their_tensor_name(ours: str) -> str:
    """transcribe.cpp's name for one of our tensor names (ExportError for a name it has no slot for)."""
    if ours in _TOP:
        return _TOP[ours]
    layers = (("enc.blk.", _ENC_LAYER, "enc.blocks."), ("dec.blk.", _DEC_LAYER, "dec.blocks."))
    for prefix, table, their_prefix in layers:
        if ours.startswith(prefix):
            layer, _, rest = ours[len(prefix) :].partition(".")
            if layer.isdigit() and rest in table:
                return f"{their_prefix}{int(layer)}.{table[rest]}"
    raise ExportError(f"tensor {ours!r} has no counterpart in transcribe.cpp's Voxtral Realtime layout")


class _Fields:
    """Typed access to a GGUFReader's metadata."""

    def __init__(self, reader: GGUFReader) -> None:
        self._fields = reader.fields

    def has(self, key: str) -> bool:
        return key in self._fields

    def scalar(self, key: str) -> Any:
        if key not in self._fields:
            raise ExportError(f"source file lacks metadata key {key!r}")
        f = self._fields[key]
        if f.types[0] == GGUFValueType.STRING:
            return bytes(f.parts[f.data[0]]).decode("utf-8")
        return f.parts[f.data[0]][0].item()

    def u32(self, key: str) -> int:
        return int(self.scalar(key))

    def f32(self, key: str) -> float:
        return float(self.scalar(key))

    def array(self, key: str) -> np.ndarray:
        if key not in self._fields:
            raise ExportError(f"source file lacks metadata key {key!r}")
        f = self._fields[key]
        return np.concatenate([f.parts[i] for i in f.data]) if f.data else np.zeros(0)


def _byte_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable character table (what byte-level BPE vocabularies store)."""
    printable = [
        *range(ord("!"), ord("~") + 1),
        *range(ord("¡"), ord("¬") + 1),
        *range(ord("®"), ord("ÿ") + 1),
    ]
    table = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def tekken_pieces(fields: _Fields) -> list[bytes]:
    """Every token's raw bytes in id order, from our ``tokenizer.tekken.token_bytes`` / ``_offsets``."""
    blob = fields.array("tokenizer.tekken.token_bytes").astype(np.uint8).tobytes()
    offsets = fields.array("tokenizer.tekken.token_offsets").astype(np.int64)
    return [blob[offsets[i] : offsets[i + 1]] for i in range(len(offsets) - 1)]


def id_pieces(pieces: list[bytes], n_special: int) -> list[bytes]:
    """The ``--id-vocab`` table: control tokens unchanged, every normal token's bytes replaced by
    ``[ID]`` (so a transcript is the list of emitted normal-token ids)."""
    return [p if i < n_special else f"[{i}]".encode("ascii") for i, p in enumerate(pieces)]


def byte_level_vocab(pieces: list[bytes], n_special: int) -> tuple[list[str], list[int], list[str]]:
    """(tokens, token types, merges) in GPT-2 byte-level form.

    Control tokens (ids below ``n_special``) keep their text and are typed CONTROL. A normal token's
    tekken rank is its id minus ``n_special``; its merge is the first split into two tokens of lower
    rank (tekken is a byte-level BPE whose ranks are merge order). Merges only matter for encoding
    text (prompts), which the bench never does; a token with no such split gets none.
    """
    enc = _byte_to_unicode()

    def text(b: bytes) -> str:
        return "".join(enc[x] for x in b)

    tokens = [p.decode("utf-8", "replace") if i < n_special else text(p) for i, p in enumerate(pieces)]
    types = [TOKEN_TYPE_CONTROL if i < n_special else TOKEN_TYPE_NORMAL for i in range(len(pieces))]
    rank = {p: i - n_special for i, p in enumerate(pieces) if i >= n_special}
    merges: list[str] = []
    for i in range(n_special, len(pieces)):
        p = pieces[i]
        r = rank[p]
        for cut in range(1, len(p)):
            left, right = p[:cut], p[cut:]
            if rank.get(left, r) < r and rank.get(right, r) < r:
                merges.append(f"{text(left)} {text(right)}")
                break
    return tokens, types, merges


def time_inv_freq(dim: int, theta: float) -> np.ndarray:
    """F32 [dim/2]: the delay embedding's frequencies theta^(-i / (dim/2)), i = 0 .. dim/2 - 1."""
    half = dim // 2
    return np.exp(-math.log(theta) * np.arange(half, dtype=np.float64) / half).astype(np.float32)


def _check_pads(f: _Fields) -> None:
    left = f.u32("voxtral.audio.n_left_pad_tokens")
    right = f.u32("voxtral.audio.n_right_pad_extra_tokens")
    if left != LEFT_PAD_TOKENS or right != RIGHT_PAD_EXTRA_TOKENS:
        raise ExportError(
            f"this file pads {left} tokens left / delay+1+{right} right; transcribe.cpp fixes "
            f"{LEFT_PAD_TOKENS} / delay+1+{RIGHT_PAD_EXTRA_TOKENS} in its code, so the two engines would "
            "not compute the same thing"
        )


def write_metadata(w: GGUFWriter, f: _Fields, pieces: list[bytes]) -> None:
    """transcribe.cpp's hyper-parameters, frontend description and tokenizer, from ours."""
    _check_pads(f)
    enc, dec = "voxtral.encoder.", "voxtral.decoder."
    n_vocab = f.u32(dec + "n_vocab")
    if len(pieces) != n_vocab:
        raise ExportError(f"tokenizer holds {len(pieces)} tokens, decoder n_vocab is {n_vocab}")
    w.add_name(f.scalar("general.name") if f.has("general.name") else "Voxtral Realtime")
    if f.has("general.file_type"):
        w.add_file_type(f.u32("general.file_type"))
    w.add_string("stt.variant", "voxtral-mini-4b-realtime-2602")
    w.add_bool("stt.capability.streaming", True)
    w.add_bool("stt.capability.lang_detect", True)
    w.add_bool("stt.capability.translate", False)

    n_special = f.u32("tokenizer.tekken.n_special")
    tokens, types, merges = byte_level_vocab(pieces, n_special)
    control = {p: i for i, p in enumerate(pieces[:n_special])}
    w.add_string("tokenizer.ggml.model", "gpt2")
    w.add_string("tokenizer.ggml.pre", "tekken")
    w.add_array("tokenizer.ggml.tokens", tokens)
    w.add_array("tokenizer.ggml.token_type", types)
    w.add_array("tokenizer.ggml.merges", merges)
    eos = f.u32("tokenizer.tekken.eos_id")
    w.add_uint32("tokenizer.ggml.bos_token_id", f.u32("tokenizer.tekken.bos_id"))
    w.add_uint32("tokenizer.ggml.eos_token_id", eos)
    w.add_uint32("tokenizer.ggml.unknown_token_id", control.get(b"<unk>", 0))
    w.add_uint32("tokenizer.ggml.padding_token_id", control.get(b"<pad>", eos))
    w.add_bool("tokenizer.ggml.add_bos_token", True)
    w.add_bool("tokenizer.ggml.add_eos_token", False)

    p = "stt.voxtral_realtime."
    w.add_uint32(p + "streaming_pad_token_id", f.u32("tokenizer.tekken.streaming_pad_id"))
    n_head = f.u32(enc + "n_head")
    enc_embd = f.u32(enc + "n_embd")
    downsample = f.u32("voxtral.audio.downsample_factor")
    for key, value in (
        ("encoder.n_layers", f.u32(enc + "n_layer")),
        ("encoder.d_model", enc_embd),
        ("encoder.n_heads", n_head),
        ("encoder.n_kv_heads", n_head),
        ("encoder.head_dim", f.u32(enc + "head_dim")),
        ("encoder.ffn_dim", f.u32(enc + "n_ff")),
        ("encoder.num_mel_bins", f.u32("voxtral.audio.n_mel")),
        ("encoder.max_position_embeddings", ENCODER_MAX_POSITIONS),
        ("encoder.sliding_window", f.u32(enc + "sliding_window")),
        ("projector.downsample_factor", downsample),
        ("projector.input_dim", enc_embd * downsample),
        ("projector.audio_length_per_tok", f.u32("voxtral.audio.mel_frames_per_token")),
        ("decoder.n_layers", f.u32(dec + "n_layer")),
        ("decoder.hidden_size", f.u32(dec + "n_embd")),
        ("decoder.intermediate_size", f.u32(dec + "n_ff")),
        ("decoder.n_heads", f.u32(dec + "n_head")),
        ("decoder.n_kv_heads", f.u32(dec + "n_head_kv")),
        ("decoder.head_dim", f.u32(dec + "head_dim")),
        ("decoder.sliding_window", f.u32(dec + "sliding_window")),
        ("decoder.max_position_embeddings", f.u32(dec + "max_position")),
        ("decoder.vocab_size", n_vocab),
        ("time.default_num_delay_tokens", f.u32("voxtral.default_num_delay_tokens")),
        ("time.embed_dim", f.u32(dec + "n_embd")),
        ("time.ada_hidden", f.u32(dec + "ada_dim")),
    ):
        w.add_uint32(p + key, value)
    for key, value in (
        ("encoder.rope_theta", f.f32(enc + "rope_theta")),
        ("encoder.rms_norm_eps", f.f32(enc + "rms_eps")),
        ("decoder.rope_theta", f.f32(dec + "rope_theta")),
        ("decoder.rms_norm_eps", f.f32(dec + "rms_eps")),
        ("time.embed_theta", f.f32("voxtral.time_embedding_theta")),
    ):
        w.add_float32(p + key, value)
    w.add_string(p + "encoder.hidden_act", "silu")
    w.add_string(p + "projector.hidden_act", "gelu")
    w.add_string(p + "decoder.hidden_act", "silu")
    w.add_bool(p + "decoder.tie_word_embeddings", True)

    n_fft = f.u32("voxtral.audio.n_fft")
    fe = "stt.frontend."
    w.add_string(fe + "type", "mel")
    for key, value in (
        ("num_mels", f.u32("voxtral.audio.n_mel")),
        ("sample_rate", f.u32("voxtral.audio.sample_rate")),
        ("n_fft", n_fft),
        ("win_length", n_fft),
        ("hop_length", f.u32("voxtral.audio.hop_length")),
    ):
        w.add_uint32(fe + key, value)
    for key, value in (
        ("global_log_mel_max", f.f32("voxtral.audio.global_log_mel_max")),
        ("dither", 0.0),
        ("pre_emphasis", 0.0),
        ("f_min", 0.0),
        ("f_max", 8000.0),
    ):
        w.add_float32(fe + key, value)
    w.add_string(fe + "window", "hann_periodic")
    w.add_string(fe + "normalize", "global")
    w.add_string(fe + "pad_mode", "reflect")
    w.add_string(fe + "mel_norm", "slaney")
    w.add_bool(fe + "center", True)


Exported = tuple[str, np.ndarray, GGMLQuantizationType]


def bf16_to_f32(raw: np.ndarray) -> np.ndarray:
    """BF16 bytes (uint8 [..., 2n]) as F32 [..., n]: exact, a BF16 value is the top half of an F32."""
    halves = np.ascontiguousarray(raw).view(np.uint16).astype(np.uint32)
    return (halves << 16).view(np.float32)


def exported_tensors(reader: GGUFReader, f: _Fields) -> Iterator[Exported]:
    """(their name, data, type) per tensor: our bytes unchanged except the mel filterbank's transpose
    and BF16 conv kernels widened to F32 (transcribe.cpp's conv takes F32/F16 only; the widening is
    exact), plus the delay embedding's frequencies."""
    seen = set()
    for t in reader.tensors:
        name = their_tensor_name(t.name)
        data, qtype = t.data, t.tensor_type
        if t.name == "audio.mel_filters":
            if qtype != GGMLQuantizationType.F32:
                raise ExportError("audio.mel_filters is not F32; its transpose needs plain floats")
            data = np.ascontiguousarray(np.asarray(data).T)  # [n_freq][n_mel] -> [n_mel][n_freq]
        elif name.startswith("enc.conv.") and name.endswith(".weight"):
            if qtype == GGMLQuantizationType.BF16:
                data, qtype = bf16_to_f32(data), GGMLQuantizationType.F32
            elif qtype not in (GGMLQuantizationType.F32, GGMLQuantizationType.F16):
                raise ExportError(
                    f"{t.name} is {qtype.name}; transcribe.cpp's conv stem takes F32 or F16 only"
                )
        seen.add(name)
        yield name, data, qtype
    inv_freq = time_inv_freq(f.u32("voxtral.decoder.n_embd"), f.f32("voxtral.time_embedding_theta"))
    yield "dec.time_embed.inv_freq", inv_freq, GGMLQuantizationType.F32
    for required in ("frontend.mel_filterbank", "frontend.window", "dec.token_embd.weight"):
        if required not in seen:
            raise ExportError(f"source file has no tensor for {required!r}")


def export(src: Path, dst: Path, id_vocab: bool = False) -> int:
    """Write ``dst`` from ``src``; returns the number of tensors written."""
    reader = GGUFReader(src)
    f = _Fields(reader)
    arch = f.scalar("general.architecture")
    if arch != ARCH:
        raise ExportError(f"{src} holds architecture {arch!r}, not {ARCH!r}")
    tmp = dst.with_name(f".{dst.name}.part")
    w = GGUFWriter(tmp, ARCH)
    try:
        pieces = tekken_pieces(f)
        if id_vocab:
            pieces = id_pieces(pieces, f.u32("tokenizer.tekken.n_special"))
        write_metadata(w, f, pieces)
        n = 0
        for name, data, qtype in exported_tensors(reader, f):
            w.add_tensor(name, data, raw_dtype=qtype)
            n += 1
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        tmp.replace(dst)
    except BaseException:
        w.close()
        tmp.unlink(missing_ok=True)
        raise
    return n


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("src", type=Path, help="one of our Voxtral Realtime GGUF files (any type)")
    ap.add_argument("dst", type=Path, help="the transcribe.cpp GGUF to write")
    ap.add_argument(
        "--id-vocab", action="store_true", help="normal tokens spell their ids ([ID]): for id-by-id checks"
    )
    args = ap.parse_args(argv)
    try:
        n = export(args.src, args.dst, args.id_vocab)
    except ExportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {args.dst} ({n} tensors, {args.dst.stat().st_size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
