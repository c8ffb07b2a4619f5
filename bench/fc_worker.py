"""One FastConformer speed measurement in its own process, printed as one JSON line (for bench_fastconformer).

    python bench/fc_worker.py ours --model F.gguf --latency 560 --threads 2 --seconds 20
    /work/refenv/bin/python bench/fc_worker.py ref --hf DIR --latency 560 --threads 2 --seconds 20
    python bench/fc_worker.py roofline --threads 2

``ours``: ``captionist.engine`` streams ``--seconds`` of speech-like audio (bench/speechlike.py, seed 1)
fed in 10 ms pieces as a live capture would, after an untimed warm-up stream of 2 s; only the
``feed`` / ``finish`` calls are timed (``compute_s``); ``timings`` is the stream's ``timings()``.

``ref``: transformers' ``NemotronAsrStreamingForRNNT`` in float32, ``torch.set_num_threads(N)``: the
cache-aware streaming ``generate`` with ``input_features`` a generator of mel chunks (first chunk
``1 + 8r`` frames, then ``8(r + 1)``), each computed from its own slice of audio by the feature extractor
inside the generator (``center=True`` for the first, ``False`` after, as the processor streams), so
the features count like our mel; after an untimed 2 s warm-up ``generate``. The audio is the same
signal cut to whole chunks. Needs only torch, transformers, numpy and soundfile.

``roofline``: read bandwidth and F32 matmul rate with N threads (bench/roofline.py).
"""

from __future__ import annotations

import os
import sys


def _arg(argv: list[str], name: str, default: str) -> str:
    for i, a in enumerate(argv):
        if a == name and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    return default


# BLAS / OpenMP thread counts must be fixed before numpy or torch load.
_N = _arg(sys.argv[1:], "--threads", "1")
os.environ.update(OPENBLAS_NUM_THREADS=_N, OMP_NUM_THREADS=_N, MKL_NUM_THREADS=_N)

import argparse  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from speechlike import SpeechLike  # noqa: E402

SR = 16000
PIECE = 160  # 10 ms feeds
WARMUP_S = 2.0
SEED = 1


def speech(seconds: float) -> np.ndarray:
    return np.concatenate(list(SpeechLike(seed=SEED).chunks(SR, int(SR * seconds))))


def run_ours(args: argparse.Namespace) -> dict:
    from captionist.engine import Model

    pcm = speech(args.seconds)
    t0 = time.perf_counter()
    m = Model(args.model, backend="cpu", n_threads=args.threads)
    load_s = time.perf_counter() - t0
    warm = m.stream(latency_ms=args.latency)
    for a in range(0, int(SR * WARMUP_S), PIECE):
        warm.feed(pcm[a : a + PIECE])
    warm.finish()
    del warm
    s = m.stream(latency_ms=args.latency)
    pieces = [np.ascontiguousarray(pcm[a : a + PIECE]) for a in range(0, pcm.size, PIECE)]
    feed_ms = np.zeros(len(pieces) + 1)
    load_start = os.getloadavg()[0]
    c0, w0 = time.process_time(), time.perf_counter()
    for i, p in enumerate(pieces):
        t = time.perf_counter()
        s.feed(p)
        feed_ms[i] = time.perf_counter() - t
    t = time.perf_counter()
    s.finish()
    feed_ms[-1] = time.perf_counter() - t
    wall = time.perf_counter() - w0
    cpu = time.process_time() - c0
    return {
        "engine": "ours",
        "model": str(args.model),
        "latency_ms": args.latency,
        "threads": args.threads,
        "audio_s": pcm.size / SR,
        "compute_s": float(feed_ms.sum()),
        "max_feed_ms": 1e3 * float(feed_ms.max()),
        "cpu_use": cpu / wall,
        "load_s": load_s,
        "cpu_features": str(m.info.get("cpu_features", "")),
        "repacked_tensors": int(m.info.get("repacked_tensors", 0)),
        "weights_mapped": bool(m.info.get("weights_mapped", False)),
        "timings": s.timings(),
        "load_start": load_start,
        "load_end": os.getloadavg()[0],
    }


def run_ref(args: argparse.Namespace) -> dict:
    import torch
    from transformers import NemotronAsrStreamingFeatureExtractor, NemotronAsrStreamingForRNNT
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    torch.set_num_threads(args.threads)
    hf = Path(args.hf)
    proc_cfg = json.loads((hf / "processor_config.json").read_text())
    fe_cfg = {k: v for k, v in proc_cfg["feature_extractor"].items() if k != "feature_extractor_type"}
    fe = NemotronAsrStreamingFeatureExtractor(**fe_cfg)
    t0 = time.perf_counter()
    model, loading = NemotronAsrStreamingForRNNT.from_pretrained(
        hf, dtype=torch.float32, output_loading_info=True
    )
    bad = {k: sorted(v) for k, v in loading.items() if v}
    if bad:  # a missing weight would be initialised at random: not the same weights as ours
        raise SystemExit(f"{hf}: weights do not match the model: {bad}")
    model.eval()
    load_s = time.perf_counter() - t0
    sub = model.config.encoder_config.subsampling_factor
    r = args.latency // (sub * fe.hop_length * 1000 // SR) - 1  # lookahead from latency (r + 1 frames)
    if r not in proc_cfg["supported_num_lookahead_tokens"]:
        raise SystemExit(f"latency {args.latency} ms is lookahead {r}, not supported by {hf}")
    first, per = 1 + sub * r, sub * (r + 1)
    hop, n_fft, win = fe.hop_length, fe.n_fft, fe.win_length
    blank = model.config.blank_token_id
    feature_s = [0.0]

    def chunks(pcm: np.ndarray, k: int):  # noqa: ANN202 - a generator of [1, frames, n_mel] tensors
        t = time.perf_counter()
        x = fe(pcm[: (first - 1) * hop + win // 2], sampling_rate=SR, center=True, return_tensors="pt")
        feats = x["input_features"][:, :first]
        feature_s[0] += time.perf_counter() - t
        yield feats
        for j in range(k):
            t = time.perf_counter()
            a = (first + j * per) * hop - n_fft // 2  # < 0 for the first frames at lookahead 0: zeros
            piece = pcm[max(0, a) : a + per * hop + win]
            if a < 0:
                piece = np.concatenate([np.zeros(-a, np.float32), piece])
            x = fe(piece, sampling_rate=SR, center=False, return_tensors="pt")
            feats = x["input_features"][:, :per]
            feature_s[0] += time.perf_counter() - t
            yield feats

    def n_later(n_samples: int) -> int:  # whole later chunks whose audio slice fits in n_samples
        return max(0, ((n_samples - win + n_fft // 2) // hop - first) // per)

    def decode(pcm: np.ndarray) -> tuple[float, dict]:
        k = n_later(pcm.size)
        feature_s[0] = 0.0
        t = time.perf_counter()
        with torch.inference_mode():
            out = model.generate(input_features=chunks(pcm, k), num_lookahead_tokens=r)
        seconds = time.perf_counter() - t
        seq = out.sequences[0, 1:]
        n_mel = first + k * per
        return seconds, {
            "n_chunks": k + 1,
            "n_mel_frames": n_mel,
            "n_steps": int(seq.numel()),
            "n_frames": int(out.durations[0].sum()),
            "n_tokens": int((seq != blank).sum()),
        }

    pcm = speech(args.seconds)
    decode(pcm[: int(SR * WARMUP_S)])
    load_start = os.getloadavg()[0]
    c0, w0 = time.process_time(), time.perf_counter()
    seconds, info = decode(pcm)
    cpu = (time.process_time() - c0) / (time.perf_counter() - w0)
    return {
        "engine": "ref",
        "hf": str(hf),
        "latency_ms": args.latency,
        "lookahead": r,
        "threads": args.threads,
        "audio_s": info["n_mel_frames"] * hop / SR,
        "compute_s": seconds,
        "feature_s": feature_s[0],
        "cpu_use": cpu,
        "load_s": load_s,
        "torch": torch.__version__,
        **info,
        "load_start": load_start,
        "load_end": os.getloadavg()[0],
    }


def run_roofline(args: argparse.Namespace) -> dict:
    from roofline import matmul_gflops, read_bandwidth_gbs

    load_start = os.getloadavg()[0]
    bw, how = read_bandwidth_gbs(args.threads, n_bytes=args.bw_bytes)
    gflops = matmul_gflops()
    return {
        "threads": args.threads,
        "bandwidth_gbs": bw,
        "bandwidth_how": how,
        "matmul_gflops": gflops,
        "load_start": load_start,
        "load_end": os.getloadavg()[0],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("ours", "ref", "roofline"))
    ap.add_argument("--model", type=Path, help="ours: GGUF file")
    ap.add_argument("--hf", type=Path, help="ref: HF folder")
    ap.add_argument("--latency", type=int, default=560, help="ms")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--bw-bytes", type=int, default=1 << 30, help="roofline: bytes of the bandwidth probe")
    args = ap.parse_args(argv)
    run = {"ours": run_ours, "ref": run_ref, "roofline": run_roofline}[args.what]
    print(json.dumps(run(args)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
