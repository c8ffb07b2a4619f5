"""The hot path per step, on every compute device this build has: graph builds, compute-buffer
growth and bytes set into / read out of the graphs, after a warm-up, for both families.

    GGML_VK_VISIBLE_DEVICES=0 python bench/bench_hot_path.py            # lavapipe shown too
    python bench/bench_hot_path.py --seconds 30 --fc ~/.cache/captionist-bench/fastconformer-120m/q8_0.gguf

A step is one encoder batch for FastConformer (a chunk of audio) and one decoder call for Voxtral
(one 80 ms token). Counts come from the stream's own ``timings()`` (graph_runner's counters), so
they are exact, not sampled. Models: the tiny reference fixtures (tests/data, converted to F32 in
--work-dir) unless --fc / --voxtral name other GGUF files; counts do not depend on the size, bytes
do. Feeds are one chunk of audio each, as a live capture delivers them.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np
from speechlike import SAMPLE_RATE, SpeechLike

from captionist import engine

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"


def fixture_gguf(work: Path, name: str) -> Path:
    from captionist.convert import convert_checkpoint

    out = work / f"{name}.gguf"
    if not out.exists():
        if name == "nemotron_tiny_ctx":
            src = DATA / "fastconformer" / name / "hf"
        else:
            src = DATA / "reference" / name / "hf"
        convert_checkpoint(src, out, "f32", progress=False)
    return out


def measure(path: Path, device: str, seconds: float, warmup: float) -> dict[str, float]:
    m = engine.Model(path, backend=device.lower(), n_threads=2)
    latency = m.default_latency_ms
    piece = max(160, latency * SAMPLE_RATE // 1000)
    s = m.stream(latency_ms=latency) if m.architecture != "voxtral_realtime" else m.stream(delay_ms=latency)
    audio = SpeechLike(seed=2).chunks(SAMPLE_RATE, int(SAMPLE_RATE * (warmup + seconds)))
    pcm = np.concatenate(list(audio))
    cut = int(SAMPLE_RATE * warmup)
    for i in range(0, cut, piece):
        s.feed(pcm[i : i + piece])
    a = s.timings()
    for i in range(cut, len(pcm), piece):
        s.feed(pcm[i : i + piece])
    b = s.timings()
    steps_key = "n_encoder_batches" if "n_encoder_batches" in b else "n_decoder_calls"
    steps = max(1.0, b[steps_key] - a[steps_key])
    return {
        "latency_ms": latency,
        "steps": steps,
        "builds": (b["n_graph_builds"] - a["n_graph_builds"]) / steps,
        "grows": (b["n_buffer_grows"] - a["n_buffer_grows"]) / steps,
        "computes": (b["n_graph_computes"] - a["n_graph_computes"]) / steps,
        "splits": (b["n_graph_splits"] - a["n_graph_splits"])
        / max(1.0, b["n_graph_computes"] - a["n_graph_computes"]),
        # recomputes of a kept graph whose views moved (what keeps ggml's CUDA graphs off)
        "moved": (b["n_moved_recomputes"] - a["n_moved_recomputes"]) / steps,
        "bytes_in": (b["n_bytes_in"] - a["n_bytes_in"]) / steps,
        "bytes_out": (b["n_bytes_out"] - a["n_bytes_out"]) / steps,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fc", type=Path, help="FastConformer GGUF (default: the tiny fixture)")
    ap.add_argument("--voxtral", type=Path, help="Voxtral GGUF (default: the tiny fixture)")
    ap.add_argument("--seconds", type=float, default=20.0, help="measured audio after the warm-up")
    ap.add_argument("--warmup", type=float, default=8.0, help="audio before counting (fills the caches)")
    ap.add_argument("--work-dir", type=Path, default=Path(tempfile.gettempdir()) / "captionist-hot-path")
    args = ap.parse_args()
    args.work_dir.mkdir(parents=True, exist_ok=True)
    models = {
        "fastconformer": args.fc or fixture_gguf(args.work_dir, "nemotron_tiny_ctx"),
        "voxtral": args.voxtral or fixture_gguf(args.work_dir, "tiny_small"),
    }
    devices = engine.compute_devices()
    print("devices: " + "; ".join(f"{d.name} ({d.description})" for d in devices))
    print(
        f"{'device':<10} {'family':<14} {'latency':>7} {'steps':>6} {'builds':>7} {'grows':>6} "
        f"{'computes':>8} {'splits':>6} {'moved':>6} {'bytes in':>10} {'bytes out':>10}   "
        f"(per step, after {args.warmup:g} s; splits per graph)"
    )
    for d in devices:
        for family, path in models.items():
            try:
                r = measure(path, d.name, args.seconds, args.warmup)
            except engine.EngineError as exc:
                print(f"{d.name:<10} {family:<14} error: {exc}")
                continue
            print(
                f"{d.name:<10} {family:<14} {r['latency_ms']:>5} ms {r['steps']:>6.0f} {r['builds']:>7.2f} "
                f"{r['grows']:>6.2f} {r['computes']:>8.2f} {r['splits']:>6.2f} {r['moved']:>6.2f} "
                f"{r['bytes_in']:>10.0f} "
                f"{r['bytes_out']:>10.0f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
