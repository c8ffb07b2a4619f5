"""Write FastConformer RNN-T models of the real sizes with random weights, for speed tests.

    python bench/make_synthetic_fastconformer.py [--sizes 0.6b,120m] [--out ~/.cache/captionist-bench]

Per size, under ``OUT/fastconformer-<size>/``: ``hf/`` (a ``save_pretrained``-style folder of
transformers' ``NemotronAsrStreamingForRNNT``: config.json, processor_config.json,
generation_config.json, a synthetic tokenizer.json with the real vocabulary size and model.safetensors
written tensor by tensor: matrices F16, the rest F32), then ``f16.gguf`` through
``captionist.convert.convert_checkpoint`` and ``q8_0.gguf`` / ``q4_k.gguf`` through
``captionist.engine.quantize``, and ``synth.json`` (the calibrated blank bias, emission rate, sizes);
``hf/offsets.json`` holds the byte offset of ``joint.head.bias`` that the calibration patches.
Existing files are kept. The converter plans the tensor list (names and shapes come from
``captionist.convert.fastconformer_tensors``), so the folder is exactly what it accepts.

Sizes: ``0.6b`` = Nemotron Speech Streaming 0.6B (24 x 1024, 8 heads, ff 4096, 2-layer LSTM 640,
vocab 1025, lookaheads 13/6/1/0); ``120m`` = Parakeet Realtime EOU 120M's shape (17 x 512, 8 heads,
ff 2048, 1-layer LSTM 640, vocab 1027 with <EOU>/<EOB>, lookahead 1), written as the same HF layout
because transformers' reference runs that and the cost of a batch-norm vs layer-norm conv module is
the same; ``tiny`` (2 x 128) only checks the scripts. Both real sizes: conv kernel 9, 256
subsampling channels (NeMo's FastConformer default), 8x subsampling, 128 mel, left context 70.

Weights: matrices N(0, 1/fan_in) (keeps every LayerNorm'd activation O(1)), embeddings N(0, 1), norms
1/0, biases N(0, 0.02^2); the joint and decoder are shaped so that whether a frame emits depends on
that frame's encoder output alone (see BLANK_ROW_SCALE below; at most one token per frame). The blank
bias is calibrated on the F16 file (bisection; the engine's greedy decoding of the benchmark's 20 s of
speech-like audio) to about ``--tokens-per-frame`` tokens per encoder frame, like speech; the same bias
is written into model.safetensors, so the reference runs the F16 file's weights exactly.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

DEFAULT_OUT = Path.home() / ".cache" / "captionist-bench"
TYPES = {"f16": "F16", "bf16": "BF16", "q8_0": "Q8_0", "q4_k": "Q4_K"}
HF_BLANK_BIAS = "joint.head.bias"
# Emission design (random weights have no notion of words). With random prediction-network weights a
# token moves the decoder into a new state in which blank may win at every later frame, or at none:
# the stream switches between silence and a token per frame at some arbitrary point, differently for
# each file type. So whether a frame emits is made a function of that frame's encoder output alone:
# ``decoder.decoder_projector`` has zero weights (its bias stays), the blank row of the joint is
# BLANK_ROW_SCALE times larger than the others (its logit then varies from frame to frame more than
# the maximum of the 1024 others, so the rate is a smooth function of the blank bias) and a frame
# emits at most MAX_SYMBOLS token (real models allow 10; with a decoder that does not change the
# joint an emitting frame would emit all 10). The cost per token is unchanged: one LSTM step, the
# projection (zeros are multiplied like any value) and one joint call.
BLANK_ROW_SCALE = 4.0
DEC_PROJ_SCALE = 0.0
MAX_SYMBOLS = 1


@dataclass(frozen=True)
class Size:
    n_embd: int
    n_layer: int
    n_head: int
    n_ff: int
    sub_channels: int
    dec_n_embd: int
    dec_n_layer: int
    n_vocab: int  # blank included (the last id)
    lookaheads: tuple[int, ...]  # default first
    eou: bool  # <EOU>/<EOB> are the two ids before the blank
    conv_kernel: int = 9
    n_mel: int = 128
    left_context: int = 70


SIZES = {
    "0.6b": Size(1024, 24, 8, 4096, 256, 640, 2, 1025, (13, 6, 1, 0), False),
    "120m": Size(512, 17, 8, 2048, 256, 640, 1, 1027, (1,), True),
    "tiny": Size(128, 2, 4, 512, 32, 128, 1, 257, (6, 0), False),
}


def model_dir(out: Path, size: str) -> Path:
    return out / f"fastconformer-{size}"


def gguf_path(out: Path, size: str, type_key: str) -> Path:
    return model_dir(out, size) / f"{type_key}.gguf"


# ---------------------------------------------------------------- the HF folder


def hf_configs(z: Size) -> dict[str, dict]:
    """config.json, processor_config.json and generation_config.json (keys as transformers writes them)."""
    blank = z.n_vocab - 1
    config = {
        "architectures": ["NemotronAsrStreamingForRNNT"],
        "blank_token_id": blank,
        "decoder_hidden_size": z.dec_n_embd,
        "dtype": "float32",
        "encoder_config": {
            "activation_dropout": 0.0,
            "attention_bias": True,
            "attention_dropout": 0.0,
            "conv_kernel_size": z.conv_kernel,
            "convolution_bias": True,
            "default_num_lookahead_tokens": z.lookaheads[0],
            "dropout": 0.0,
            "dropout_positions": 0.0,
            "hidden_act": "silu",
            "hidden_size": z.n_embd,
            "initializer_range": 0.02,
            "intermediate_size": z.n_ff,
            "layerdrop": 0.0,
            "max_position_embeddings": 5000,
            "model_type": "nemotron_asr_streaming_encoder",
            "num_attention_heads": z.n_head,
            "num_hidden_layers": z.n_layer,
            "num_key_value_heads": z.n_head,
            "num_mel_bins": z.n_mel,
            "scale_input": True,
            "sliding_window": z.left_context + 1,
            "subsampling_conv_channels": z.sub_channels,
            "subsampling_conv_kernel_size": 3,
            "subsampling_conv_stride": 2,
            "subsampling_factor": 8,
        },
        "hidden_act": "relu",
        "initializer_range": 0.02,
        "is_encoder_decoder": True,
        "max_symbols_per_step": MAX_SYMBOLS,
        "model_type": "nemotron_asr_streaming",
        "num_decoder_layers": z.dec_n_layer,
        "pad_token_id": 1,
        "vocab_size": z.n_vocab,
    }
    processor = {
        "blank_token": "<blank>",
        "default_num_lookahead_tokens": z.lookaheads[0],
        "feature_extractor": {
            "feature_extractor_type": "NemotronAsrStreamingFeatureExtractor",
            "feature_size": z.n_mel,
            "hop_length": 160,
            "mel_filters_dtype": "float32",
            "n_fft": 512,
            "padding_side": "right",
            "padding_value": 0.0,
            "preemphasis": 0.97,
            "return_attention_mask": True,
            "sampling_rate": 16000,
            "win_length": 400,
        },
        "processor_class": "NemotronAsrStreamingProcessor",
        "supported_num_lookahead_tokens": list(z.lookaheads),
    }
    generation = {"decoder_start_token_id": blank, "pad_token_id": 1}
    return {"config.json": config, "processor_config.json": processor, "generation_config.json": generation}


def synthetic_tokenizer(z: Size) -> dict:
    """A BPE tokenizer.json with ``n_vocab - 1`` pieces + ``<blank>``: specials, letters, made-up words."""
    specials = ["<unk>", "<pad>"]
    tail = ["<EOU>", "<EOB>"] if z.eou else []
    letters = "etaoinshrdlcumwfgypbvkjxqz"
    pieces = list(specials) + ["▁"] + list(letters)
    n_text = z.n_vocab - 1 - len(tail)
    i = 0
    while len(pieces) < n_text:  # "▁ab", "ab", "▁abc", ...: distinct, deterministic
        a, b, c = letters[i % 26], letters[(i // 26) % 26], letters[(i // 676) % 26]
        word = a + b + (c if i >= 676 else "")
        pieces.append(("▁" if i % 2 == 0 else "") + word)
        i += 1
        if len(set(pieces)) != len(pieces):
            pieces.pop()
    pieces = pieces[:n_text] + tail
    vocab = {p: k for k, p in enumerate(pieces)}
    added = [(0, "<unk>"), (1, "<pad>")] + [(vocab[t], t) for t in tail] + [(z.n_vocab - 1, "<blank>")]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {
                "id": k,
                "content": t,
                "single_word": False,
                "lstrip": False,
                "rstrip": False,
                "normalized": False,
                "special": True,
            }
            for k, t in added
        ],
        "normalizer": {
            "type": "Sequence",
            "normalizers": [
                {"type": "Strip", "strip_left": False, "strip_right": True},
                {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": "▁"},
            ],
        },
        "pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": True},
        "post_processor": None,
        "decoder": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": True},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": "<unk>",
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": True,
            "byte_fallback": False,
            "ignore_merges": False,
            "vocab": vocab,
            "merges": [],
        },
    }


def hf_tensor_list(src: Path) -> list[tuple[str, tuple[int, ...], bool]]:
    """(name, shape, is_matrix) of every checkpoint tensor, in the converter's order."""
    from captionist.convert.fastconformer_hf import params_from_hf
    from captionist.convert.fastconformer_tensors import HF_NAMES, fastconformer_tensors

    processor = json.loads((src / "processor_config.json").read_text())
    features = processor.pop("feature_extractor")
    params = params_from_hf(json.loads((src / "config.json").read_text()), processor, features)
    seen: dict[str, tuple[tuple[int, ...], bool]] = {}
    for t in fastconformer_tensors(params, HF_NAMES):
        for s in t.sources:
            seen.setdefault(s, (tuple(t.source_shape), t.matrix))
    return [(name, shape, matrix) for name, (shape, matrix) in seen.items()]


def _values(name: str, shape: tuple[int, ...], rng: np.random.Generator, blank: int) -> np.ndarray:
    n = int(np.prod(shape))
    if "norm" in name and name.endswith(".weight"):
        return np.ones(shape, np.float32)
    if "norm" in name and name.endswith(".bias"):
        return np.zeros(shape, np.float32)
    if name.endswith(("bias", "bias_u", "bias_v")) or "bias_" in name.rsplit(".", 1)[-1]:
        return 0.02 * rng.standard_normal(n, dtype=np.float32).reshape(shape)
    if name == "decoder.embedding.weight":
        return rng.standard_normal(n, dtype=np.float32).reshape(shape)
    fan_in = n // shape[0]
    w = (rng.standard_normal(n, dtype=np.float32) / np.float32(np.sqrt(fan_in))).reshape(shape)
    if name == "joint.head.weight":
        w[blank] *= BLANK_ROW_SCALE
    if name == "decoder.decoder_projector.weight":
        w *= DEC_PROJ_SCALE
    return w


def write_safetensors(path: Path, tensors: list[tuple[str, tuple[int, ...], bool]], blank: int) -> dict:
    """Header first, then one tensor at a time (peak memory: one tensor). Returns name -> byte offset."""
    header: dict[str, dict] = {}
    offset = 0
    for name, shape, matrix in tensors:
        nbytes = int(np.prod(shape)) * (2 if matrix else 4)
        header[name] = {
            "dtype": "F16" if matrix else "F32",
            "shape": list(shape),
            "data_offsets": [offset, offset + nbytes],
        }
        offset += nbytes
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)
    rng = np.random.default_rng(20261201)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.part")
    with open(tmp, "wb") as f:
        f.write(len(head).to_bytes(8, "little"))
        f.write(head)
        for name, shape, matrix in tensors:
            data = _values(name, shape, rng, blank)
            f.write(np.ascontiguousarray(data.astype(np.float16 if matrix else np.float32)).tobytes())
            del data
    os.replace(tmp, path)
    base = 8 + len(head)
    return {name: base + h["data_offsets"][0] for name, h in header.items()}


def write_hf(folder: Path, z: Size) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, content in hf_configs(z).items():
        (folder / name).write_text(json.dumps(content, indent=2) + "\n")
    (folder / "tokenizer.json").write_text(json.dumps(synthetic_tokenizer(z), ensure_ascii=False) + "\n")
    tensors = hf_tensor_list(folder)
    offsets = write_safetensors(folder / "model.safetensors", tensors, z.n_vocab - 1)
    (folder / "offsets.json").write_text(json.dumps({HF_BLANK_BIAS: offsets[HF_BLANK_BIAS]}) + "\n")


# ---------------------------------------------------------------- blank-bias calibration


def set_blank_bias(f16: Path, hf: Path, blank: int, value: float) -> None:
    """Patch joint.out.bias[blank] in the GGUF and joint.head.bias[blank] in model.safetensors, in place."""
    from gguf import GGUFReader

    reader = GGUFReader(f16, "r+")
    bias = next(t for t in reader.tensors if t.name == "joint.out.bias")
    bias.data[blank] = np.float32(value)
    reader.data.flush()
    del reader, bias
    offset = json.loads((hf / "offsets.json").read_text())[HF_BLANK_BIAS] + 4 * blank
    with open(hf / "model.safetensors", "r+b") as f:
        f.seek(offset)
        f.write(np.float32(value).tobytes())


def emission_rate(f16: Path, seconds: float, n_threads: int) -> float:
    """Tokens per encoder frame of greedy decoding of the benchmark's audio at the default latency."""
    from fc_worker import speech

    from captionist.engine import Model

    m = Model(f16, backend="cpu", n_threads=n_threads)
    s = m.stream()
    s.feed(speech(seconds))
    s.finish()
    t = s.timings()
    return t["n_tokens"] / max(1.0, t["n_encoder_frames"])


def calibrate(
    f16: Path, hf: Path, z: Size, target: float, seconds: float, n_threads: int
) -> tuple[float, float]:
    """Bisection of the blank bias (emission falls as it rises) to about `target` tokens per frame."""
    lo, hi = -4.0, 12.0
    best = (hi, float("inf"))
    for _ in range(10):
        mid = 0.5 * (lo + hi)
        set_blank_bias(f16, hf, z.n_vocab - 1, mid)
        rate = emission_rate(f16, seconds, n_threads)
        print(f"  blank bias {mid:6.3f}: {rate:.3f} tokens/frame", flush=True)
        if abs(rate - target) < abs(best[1] - target):
            best = (mid, rate)
        if abs(rate - target) <= 0.1 * target:
            break
        lo, hi = (mid, hi) if rate > target else (lo, mid)
    set_blank_bias(f16, hf, z.n_vocab - 1, best[0])
    return best


# ---------------------------------------------------------------- main


def make_size(out: Path, size: str, types: list[str], target: float, n_threads: int) -> None:
    from captionist.convert import convert_checkpoint
    from captionist.engine import quantize

    z = SIZES[size]
    folder = model_dir(out, size)
    hf = folder / "hf"
    info_path = folder / "synth.json"
    f16 = gguf_path(out, size, "f16")
    if not (hf / "model.safetensors").exists():
        t0 = time.perf_counter()
        write_hf(hf, z)
        mb = (hf / "model.safetensors").stat().st_size / 1e6
        print(f"wrote {hf} ({mb:.0f} MB safetensors, {time.perf_counter() - t0:.0f} s)", flush=True)
    if not f16.exists() or not info_path.exists():
        t0 = time.perf_counter()
        tmp = f16.with_name("uncalibrated-f16.gguf")
        convert_checkpoint(hf, tmp, "f16", progress=False)
        print(f"converted {tmp.name} ({tmp.stat().st_size / 1e6:.0f} MB, {time.perf_counter() - t0:.0f} s)")
        seconds = 20.0  # bench_fastconformer's default audio
        bias, rate = calibrate(tmp, hf, z, target, seconds, n_threads)
        os.replace(tmp, f16)
        n_params = sum(int(np.prod(s)) for _, s, _ in hf_tensor_list(hf))
        info = {
            "size": size,
            "n_params": n_params,
            "blank_bias": bias,
            "tokens_per_frame": rate,
            "calibration_seconds": seconds,
            "dims": z.__dict__ | {"lookaheads": list(z.lookaheads)},
        }
        info_path.write_text(json.dumps(info, indent=2) + "\n")
        print(f"wrote {f16} (blank bias {bias:.3f}: {rate:.3f} tokens/frame, {n_params / 1e6:.1f} M params)")
    else:
        print(f"keep  {f16}")
    for t in types:
        path = gguf_path(out, size, t)
        if t == "f16":
            continue
        if path.exists():
            print(f"keep  {path}")
            continue
        t0 = time.perf_counter()
        if t == "bf16":  # the same weights rounded to bfloat16 instead of float16 (with the calibrated bias)
            convert_checkpoint(hf, path, "bf16", progress=False)
        else:
            quantize(f16, path, TYPES[t], n_threads)
        print(
            f"wrote {path} ({path.stat().st_size / 1e6:.0f} MB, {time.perf_counter() - t0:.0f} s)", flush=True
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="0.6b,120m", help=f"comma list of {', '.join(SIZES)}")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"cache folder (default {DEFAULT_OUT})")
    ap.add_argument("--types", default=",".join(TYPES), help=f"comma list of {', '.join(TYPES)}")
    ap.add_argument("--tokens-per-frame", type=float, default=0.25, help="calibration target")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    args = ap.parse_args(argv)
    sizes = [s.strip() for s in args.sizes.split(",") if s.strip()]
    types = [t.strip().lower() for t in args.types.split(",") if t.strip()]
    bad = [s for s in sizes if s not in SIZES] + [t for t in types if t not in TYPES]
    if bad:
        print(f"error: unknown size or type {bad[0]!r}", file=sys.stderr)
        return 2
    for size in sizes:
        make_size(args.out.expanduser(), size, types, args.tokens_per_frame, args.threads)
    return 0


if __name__ == "__main__":
    sys.exit(main())
