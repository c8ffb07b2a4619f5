"""Full-size speed on this machine vs the memory-bandwidth and compute bounds measured in the same run.

    python bench/make_synthetic_gguf.py --dims full --out /tmp/voxtral-synth
    python bench/bench_full_size.py --model-dir /tmp/voxtral-synth [--threads 2] [--seconds 3]

For each ``voxtral-synth-full-{f16,q8_0,q4_k}.gguf`` found: a live stream (delay 480 ms) is warmed
up on the first second of speech (prompt prefill and left-pad encoding happen there), then fed
``--seconds`` more in ``--chunk-ms`` pieces; the cumulative ``Stream.timings()`` difference gives
ms per decoder step (steady state: one position per call), ms per encoder token (conv + encoder +
projector, batched as the stream batches) and mel ms per token. Bounds: bytes of weights (+ KV
cache) read per decoder step / measured read bandwidth; FLOPs per step / measured numpy F32
matmul rate with the same thread count. RTF = 80 ms / (decoder + encoder + mel ms per token).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def _threads_from_argv(argv: list[str]) -> int:
    for i, a in enumerate(argv):
        if a == "--threads" and i + 1 < len(argv):
            return int(argv[i + 1])
        if a.startswith("--threads="):
            return int(a.split("=", 1)[1])
    return 2


# BLAS thread count must be fixed before numpy loads.
_N = str(_threads_from_argv(sys.argv[1:]))
os.environ.update(OPENBLAS_NUM_THREADS=_N, OMP_NUM_THREADS=_N, MKL_NUM_THREADS=_N)

import gc  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import soundfile as sf  # noqa: E402
from roofline import (  # noqa: E402
    decoder_step_flops,
    encoder_token_flops,
    matmul_gflops,
    read_bandwidth_gbs,
    step_costs,
)

from captionist.engine import Model  # noqa: E402

CLIP = Path(__file__).resolve().parent.parent / "tests/data/audio/speech_long.wav"
TYPES = ("f16", "q8_0", "q4_k")
TOKEN_MS = 80.0


def _delta(a: dict[str, float], b: dict[str, float]) -> dict[str, float]:
    return {k: b[k] - a[k] for k in b}


def measure(path: Path, n_threads: int, seconds: float, chunk_ms: int, pcm: np.ndarray) -> dict:
    """Load, warm up, stream `seconds` of audio; return the per-token figures and the model info."""
    t0 = time.perf_counter()
    m = Model(path, backend="cpu", n_threads=n_threads)
    load_s = time.perf_counter() - t0
    s = m.stream(delay_ms=480)
    warm = 16000
    t0 = time.perf_counter()
    s.feed(pcm[:warm])
    warm_s = time.perf_counter() - t0
    before = s.timings()
    step = 16 * chunk_ms
    end = warm + int(16000 * seconds)
    t0, c0 = time.perf_counter(), time.process_time()
    for a in range(warm, end, step):
        s.feed(pcm[a : min(a + step, end)])
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    d = _delta(before, s.timings())
    after = s.timings()
    info = m.info
    del s, m
    gc.collect()
    if d["n_decoder_positions"] < 1 or d["n_audio_tokens"] < 1:
        raise RuntimeError(f"{path.name}: no steady-state decoding happened; feed more audio")
    return {
        "info": info,
        "load_s": load_s,
        "warm_s": warm_s,
        "wall_s": wall,
        "cpu_use": cpu / wall,
        "dec_ms": d["decoder_ms"] / d["n_decoder_positions"],
        "dec_calls": d["n_decoder_calls"],
        "dec_positions": d["n_decoder_positions"],
        "enc_ms": d["audio_ms"] / d["n_audio_tokens"],
        "enc_tokens": d["n_audio_tokens"],
        "enc_batches": d["n_audio_batches"],
        "mel_ms": d["mel_ms"] / (d["n_mel_frames"] / 8.0),
        "total_positions": after["n_decoder_positions"],
        "total_audio_tokens": after["n_audio_tokens"],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model-dir", type=Path, required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=3.0, help="audio fed after the 1 s warm-up")
    ap.add_argument("--chunk-ms", type=int, default=480, help="feed size in ms")
    ap.add_argument("--types", default=",".join(TYPES))
    ap.add_argument("--dims", default="full", help="file-name dims (mid: a quick check of this script)")
    args = ap.parse_args(argv)
    paths = [args.model_dir / f"voxtral-synth-{args.dims}-{t}.gguf" for t in args.types.split(",")]
    missing = [p for p in paths if not p.exists()]
    if missing:
        print(
            f"error: {missing[0]} not found (run bench/make_synthetic_gguf.py --dims {args.dims})",
            file=sys.stderr,
        )
        return 2
    pcm, _ = sf.read(CLIP, dtype="float32")
    if 1.0 + args.seconds > pcm.size / 16000:
        print(f"error: --seconds must be at most {pcm.size / 16000 - 1:.1f}", file=sys.stderr)
        return 2

    bw, bw_how = read_bandwidth_gbs(args.threads)
    gflops = matmul_gflops()
    print(f"threads {args.threads}; read bandwidth {bw:.1f} GB/s ({bw_how}, 1 GiB, best of 5); "
          f"numpy F32 matmul {gflops:.1f} GFLOP/s (2048^3, best of 5)")  # fmt: skip

    rows = []
    for path in paths:
        r = measure(path, args.threads, args.seconds, args.chunk_ms, pcm)
        info, c = r["info"], step_costs(path, r["info"])
        ctx = r["total_positions"] - r["dec_positions"] / 2.0  # mean cached positions in the window
        dec_bytes = c.dec_weight_bytes + ctx * c.kv_bytes_per_position
        dec_bw_ms = dec_bytes / (bw * 1e9) * 1e3
        dec_fl_ms = decoder_step_flops(c, info, ctx) / (gflops * 1e9) * 1e3
        enc_ctx = min(
            info["encoder"]["sliding_window"], 4.0 * (r["total_audio_tokens"] - r["enc_tokens"] / 2)
        )
        enc_fl_ms = encoder_token_flops(c, info, enc_ctx) / (gflops * 1e9) * 1e3
        batch = r["enc_tokens"] / max(1, r["enc_batches"])
        enc_bw_ms = c.enc_weight_bytes / batch / (bw * 1e9) * 1e3
        total = r["dec_ms"] + r["enc_ms"] + r["mel_ms"]
        print(
            f"\n{path.name}: load {r['load_s']:.1f} s, warm-up {r['warm_s']:.1f} s, "
            f"{args.seconds:g} s of audio in {r['wall_s']:.1f} s (CPU use {r['cpu_use']:.2f} cores, "
            f"load average {os.getloadavg()[0]:.1f}); "
            f"{r['dec_positions']:.0f} decoder positions in {r['dec_calls']:.0f} calls, "
            f"{r['enc_tokens']:.0f} audio tokens in {r['enc_batches']:.0f} batches"
        )
        print(
            f"  decoder: {dec_bytes / 1e9:.2f} GB read/step -> bandwidth bound {dec_bw_ms:.0f} ms; "
            f"{decoder_step_flops(c, info, ctx) / 1e9:.1f} GFLOP/step -> compute bound {dec_fl_ms:.0f} ms"
        )
        print(f"  encoder: {encoder_token_flops(c, info, enc_ctx) / 1e9:.1f} GFLOP/token -> compute bound "
              f"{enc_fl_ms:.0f} ms; weights {c.enc_weight_bytes / 1e9:.2f} GB / batch of {batch:.1f} -> "
              f"bandwidth bound {enc_bw_ms:.0f} ms")  # fmt: skip
        name = path.name.removeprefix(f"voxtral-synth-{args.dims}-").removesuffix(".gguf")
        rows.append((name, r, dec_bw_ms, dec_fl_ms, enc_fl_ms, enc_bw_ms, total))

    print(
        "\n| type | decoder ms/step | / bw bound | / compute bound | encoder ms/token | / compute bound "
        "| / bw bound | mel ms/token | total ms/token | RTF (80 ms / total) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, r, dbw, dfl, efl, ebw, total in rows:
        print(f"| {name} | {r['dec_ms']:.0f} | {r['dec_ms'] / dbw:.2f} | {r['dec_ms'] / dfl:.2f} | "
              f"{r['enc_ms']:.0f} | {r['enc_ms'] / efl:.2f} | {r['enc_ms'] / ebw:.2f} | {r['mel_ms']:.2f} | "
              f"{total:.0f} | {TOKEN_MS / total:.3f} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
