"""Milliseconds per stream step on one compute device, for model files of either family.

    python bench/bench_device_steps.py --backend cuda FILE.gguf [FILE.gguf ...] [--json out.json]
    python bench/bench_device_steps.py --backend cpu --threads 2 voxtral-synth-mid-q4_k.gguf

Each file is loaded on ``--backend`` (``auto`` by default: the engine's own pick), a stream at the
model's default latency (Voxtral: 480 ms) is warmed up on ``--warmup`` s of speech-like audio, then
fed ``--seconds`` more in 80 ms pieces, as a live capture delivers them. What is printed comes from
the stream's own ``timings()`` counters over the measured part, per step (a step is one decoder call
for Voxtral, one 80 ms audio token; one encoder batch for FastConformer):

- ``step ms``: wall time of the ``feed`` calls / steps (everything: mel, encoder, decoder, copies);
- ``decoder ms`` / ``encoder ms``: the engine's timers for those graphs, per step;
- ``builds``, ``grows``: graphs built and compute buffers enlarged per step (0 once warm);
- ``splits``: backend splits per graph computed (1: the whole graph on the device; each op that
  falls back to the CPU adds one, and copies the per-step bytes do not count);
- ``bytes in`` / ``bytes out``: host-to-device and device-to-host bytes per step.

Used by tools/gpu_check.sh on a GPU machine (full-size random weights from make_synthetic_gguf.py and
make_synthetic_fastconformer.py); on the CPU it runs the same way.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
from speechlike import SAMPLE_RATE, SpeechLike

from captionist import engine

PIECE = SAMPLE_RATE * 80 // 1000


def measure(path: Path, backend: str, n_threads: int, warmup: float, seconds: float) -> dict:
    t0 = time.perf_counter()
    m = engine.Model(path, backend=backend, n_threads=n_threads)
    load_s = time.perf_counter() - t0
    voxtral = m.architecture == "voxtral_realtime"
    latency = 480 if voxtral and 480 in m.latencies_ms else m.default_latency_ms
    s = m.stream(latency_ms=latency)
    total = int(SAMPLE_RATE * (warmup + seconds))
    pcm = np.concatenate(list(SpeechLike(seed=1).chunks(SAMPLE_RATE, total)))
    cut = int(SAMPLE_RATE * warmup) // PIECE * PIECE
    for i in range(0, cut, PIECE):
        s.feed(pcm[i : i + PIECE])
    a = s.timings()
    wall = 0.0
    for i in range(cut, pcm.size, PIECE):
        t = time.perf_counter()
        s.feed(pcm[i : i + PIECE])
        wall += time.perf_counter() - t
    b = s.timings()
    d = {k: b[k] - a.get(k, 0.0) for k in b}
    steps_key = "n_decoder_calls" if voxtral else "n_encoder_batches"
    steps = d[steps_key]
    if steps < 1:
        raise RuntimeError(f"{path.name}: no steps in the measured {seconds:g} s; feed more audio")
    enc_ms = d["audio_ms"] if voxtral else d["encoder_ms"]
    return {
        "file": f"{path.parent.name}/{path.name}",
        "architecture": m.architecture,
        "backend": m.info["backend"],
        "latency_ms": latency,
        "load_s": load_s,
        "steps": steps,
        "positions_per_step": d["n_decoder_positions"] / steps if voxtral else d["n_encoder_frames"] / steps,
        "step_ms": wall * 1e3 / steps,
        "decoder_ms": d["decoder_ms"] / steps,
        "encoder_ms": enc_ms / steps,
        "builds": d["n_graph_builds"] / steps,
        "grows": d["n_buffer_grows"] / steps,
        "splits": d["n_graph_splits"] / max(1.0, d["n_graph_computes"]),
        "bytes_in": d["n_bytes_in"] / steps,
        "bytes_out": d["n_bytes_out"] / steps,
        "load_average": os.getloadavg()[0],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", type=Path, nargs="+", help="GGUF model files (Voxtral or FastConformer)")
    ap.add_argument("--backend", default="auto", help="auto, cpu, cuda, vulkan, metal, or a device name")
    ap.add_argument("--threads", type=int, default=2, help="CPU threads (for the CPU backend and host work)")
    ap.add_argument("--warmup", type=float, default=8.0, help="s of audio before counting (fills the caches)")
    ap.add_argument("--seconds", type=float, default=6.0, help="s of audio measured")
    ap.add_argument("--json", type=Path, help="write the rows here (after each file)")
    args = ap.parse_args(argv)
    missing = [p for p in args.files if not p.is_file()]
    if missing:
        print(f"error: {missing[0]} not found", file=sys.stderr)
        return 2
    print(f"devices: {'; '.join(f'{d.name} ({d.description})' for d in engine.compute_devices())}")
    print(
        f"| file | backend | latency ms | steps | step ms | decoder ms | encoder ms | builds | grows "
        f"| splits | bytes in | bytes out | load s |   (per step, after {args.warmup:g} s of warm-up)"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    rows: list[dict] = []
    failed = 0
    for path in args.files:
        try:
            r = measure(path, args.backend, args.threads, args.warmup, args.seconds)
        except (engine.EngineError, RuntimeError) as exc:
            print(f"| {path.parent.name}/{path.name} | error: {exc} |")
            rows.append({"file": f"{path.parent.name}/{path.name}", "error": str(exc)})
            failed += 1
        else:
            rows.append(r)
            print(
                f"| {r['file']} | {r['backend']} | {r['latency_ms']} | {r['steps']:.0f} | {r['step_ms']:.2f} "
                f"| {r['decoder_ms']:.2f} | {r['encoder_ms']:.2f} | {r['builds']:.2f} | {r['grows']:.2f} "
                f"| {r['splits']:.2f} | {r['bytes_in']:.0f} | {r['bytes_out']:.0f} | {r['load_s']:.2f} |",
                flush=True,
            )
        if args.json:
            args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
