"""Soak test: a long live stream of speech-like audio with pauses; memory and per-chunk cost must stay flat.

    python bench/bench_stream_soak.py --model tiny_small --minutes 30
    python bench/bench_stream_soak.py --model full-q4_k --minutes 5 --max-wall-minutes 14

``--model``: ``tiny_small`` / ``tiny_wide`` (the reference tiny models, converted to F32 once into
--work-dir), ``full-q4_k`` / ``full-q8_0`` / ``full-f16`` (bench/make_synthetic_gguf.py files in
--model-dir) or a GGUF path. Audio: bench/speechlike.py (seeded, generated chunk by chunk, never
held whole). The stream is the engine's raw live stream (EOS never ends it), so no Python-side
text accumulates; only counts and the last words are kept.

Per chunk: engine time (the sum of ``timings()`` *_ms deltas: mel, conv if reported, audio,
decoder), wall time, RSS (VmRSS of /proc/self/status) and decoder positions. Printed: medians
over a window of chunks at the start (right after --warmup-s), middle and end; the late/early
ratio of the per-chunk median (target <= 1.1); RSS growth after the warm-up (target <= 5 MB);
``state_bytes`` (bytes of the stream's caches and buffers) at start and end, which must be equal.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
from speechlike import SAMPLE_RATE, SpeechLike

from captionist import _engine
from captionist.engine import Model

ROOT = Path(__file__).resolve().parent.parent
TINY = ("tiny_small", "tiny_wide")
FULL = {"full-q4_k": "q4_k", "full-q8_0": "q8_0", "full-f16": "f16"}
TARGET_RATIO = 1.1
TARGET_RSS_MB = 5.0


def rss_mb() -> float:
    """Resident set size of this process in MB (VmRSS)."""
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    raise RuntimeError("VmRSS not found in /proc/self/status")


def engine_ms(t: dict[str, float]) -> float:
    """All engine time so far: every *_ms field (mel, conv when reported apart, audio, decoder)."""
    return sum(v for k, v in t.items() if k.endswith("_ms"))


def resolve_model(spec: str, work_dir: Path, model_dir: Path) -> Path:
    if spec in TINY:
        from captionist.convert import convert_checkpoint

        out = work_dir / f"{spec}.f32.gguf"
        if not out.exists():
            work_dir.mkdir(parents=True, exist_ok=True)
            convert_checkpoint(ROOT / "tests/data/reference" / spec / "hf", out, "f32", progress=False)
        return out
    if spec in FULL:
        path = model_dir / f"voxtral-synth-full-{FULL[spec]}.gguf"
        if not path.exists():
            raise SystemExit(f"error: {path} not found (run bench/make_synthetic_gguf.py --dims full)")
        return path
    path = Path(spec)
    if not path.is_file():
        raise SystemExit(f"error: --model {spec!r} is neither {', '.join(TINY + tuple(FULL))} nor a file")
    return path


class Soak:
    """Per-chunk records of one stream."""

    def __init__(self) -> None:
        self.engine_ms: list[float] = []
        self.wall_ms: list[float] = []
        self.rss: list[float] = []
        self.positions: list[float] = []
        self.audio_s: list[float] = []

    def window(self, lo: int, hi: int) -> dict[str, float]:
        sl = slice(lo, hi)
        pos = max(1.0, float(np.sum(self.positions[sl])))  # decoder positions in the window
        return {
            "audio_s": self.audio_s[hi - 1],
            "engine_ms": float(np.median(self.engine_ms[sl])),
            "wall_ms": float(np.median(self.wall_ms[sl])),
            "p10_ms": float(np.percentile(self.engine_ms[sl], 10)),  # least disturbed by other processes
            "ms_per_token": float(np.sum(self.engine_ms[sl])) / pos,
            "positions": float(np.sum(self.positions[sl])),
            "rss": self.rss[hi - 1],
        }


def run(args: argparse.Namespace, path: Path) -> int:
    m = Model(path, backend="cpu", n_threads=args.threads)
    s = _engine.Stream(m._m, args.delay_ms // 80, False, False)
    chunk = SAMPLE_RATE * args.chunk_ms // 1000
    gen = SpeechLike(args.seed)
    rec = Soak()
    n_tokens, events, tail, fed = 0, {}, "", 0
    states = [(0.0, s.state_bytes)]  # (audio s, state_bytes) at every change
    warm_idx, warm_rss, warm_state = -1, 0.0, 0
    t_start, c_start = time.perf_counter(), time.process_time()
    every = max(1, int(args.progress_s * 1000 / args.chunk_ms))
    print(f"{path.name}: {args.threads} threads, delay {args.delay_ms} ms, {args.chunk_ms} ms feeds, "
          f"{args.minutes:g} min of audio (seed {args.seed}); RSS after load {rss_mb():.1f} MB; "
          f"state_bytes {states[0][1]}; load average {os.getloadavg()[0]:.2f}", flush=True)  # fmt: skip
    for pcm in gen.chunks(chunk, int(SAMPLE_RATE * 60 * args.minutes)):
        before = s.timings()
        t0 = time.perf_counter()
        r = s.feed(pcm)
        wall = (time.perf_counter() - t0) * 1e3
        after = s.timings()
        fed += pcm.size
        rec.engine_ms.append(engine_ms(after) - engine_ms(before))
        rec.wall_ms.append(wall)
        rec.positions.append(after["n_decoder_positions"] - before["n_decoder_positions"])
        rec.rss.append(rss_mb())
        rec.audio_s.append(fed / SAMPLE_RATE)
        if s.state_bytes != states[-1][1]:
            states.append((fed / SAMPLE_RATE, s.state_bytes))
        n_tokens += len(r["new_tokens"])
        for e in r["events"]:
            events[e] = events.get(e, 0) + 1
        tail = (tail + "".join(p for _, p, _ in r["new_tokens"]) + r["text_tail"])[-60:]
        i = len(rec.engine_ms)
        if warm_idx < 0 and fed >= args.warmup_s * SAMPLE_RATE:
            warm_idx, warm_rss, warm_state = i, rec.rss[-1], s.state_bytes
        if i % every == 0:
            w = rec.window(max(0, i - args.window), i)
            el = time.perf_counter() - t_start
            print(f"  {w['audio_s'] / 60:6.2f} min audio, {el / 60:6.2f} min wall: chunk "
                  f"{w['engine_ms']:.1f} ms (median of last {min(i, args.window)}), RSS {w['rss']:.1f} MB, "
                  f"{n_tokens} tokens", flush=True)  # fmt: skip
        if args.max_wall_minutes and time.perf_counter() - t_start > 60 * args.max_wall_minutes:
            print(f"  stopped after --max-wall-minutes {args.max_wall_minutes:g}", flush=True)
            break
    wall_total = time.perf_counter() - t_start
    cpu_use = (time.process_time() - c_start) / wall_total
    n = len(rec.engine_ms)
    if warm_idx < 0 or n - warm_idx < 3 * args.window:
        print(f"error: only {n} chunks ({max(warm_idx, 0)} of them warm-up); need warm-up + 3 windows "
              f"of {args.window}: stream longer or use a smaller --window", file=sys.stderr)  # fmt: skip
        return 2
    mid = warm_idx + (n - warm_idx) // 2 - args.window // 2
    rows = {
        "start": rec.window(warm_idx, warm_idx + args.window),
        "middle": rec.window(mid, mid + args.window),
        "end": rec.window(n - args.window, n),
    }
    t = s.timings()
    speech = gen.n_speech_samples / max(1, gen.n_speech_samples + gen.n_pause_samples)
    print(f"\n{fed / SAMPLE_RATE / 60:.2f} min of audio ({speech:.0%} speech) in {wall_total / 60:.2f} min "
          f"wall ({fed / SAMPLE_RATE / wall_total:.2f}x real time, CPU use {cpu_use:.2f} cores, load "
          f"average {os.getloadavg()[0]:.2f}); {n} chunks; {t['n_decoder_positions']:.0f} decoder "
          f"positions; {n_tokens} tokens committed; events {events}")  # fmt: skip
    print(f"timings keys: {sorted(k for k in t if k.endswith('_ms'))}; last words: {tail!r}")
    print(f"\nwindows of {args.window} chunks ({args.window * args.chunk_ms / 1000:g} s of audio), "
          f"warm-up {args.warmup_s:g} s ({warm_idx} chunks):")  # fmt: skip
    print("| window | ends at audio min | engine ms/chunk (median) | wall ms/chunk (median) "
          "| engine ms/chunk (10th pct) | engine ms per 80 ms of audio | positions | RSS MB |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for name, w in rows.items():
        per80 = w["engine_ms"] * 80.0 / args.chunk_ms
        print(f"| {name} | {w['audio_s'] / 60:.2f} | {w['engine_ms']:.2f} | {w['wall_ms']:.2f} | "
              f"{w['p10_ms']:.2f} | {per80:.2f} | {w['positions']:.0f} | {w['rss']:.1f} |")  # fmt: skip
    ratio = rows["end"]["engine_ms"] / rows["start"]["engine_ms"]
    ratio_wall = rows["end"]["wall_ms"] / rows["start"]["wall_ms"]
    ratio_p10 = rows["end"]["p10_ms"] / rows["start"]["p10_ms"]
    growth_end = rec.rss[-1] - warm_rss
    growth_max = max(rec.rss[warm_idx:]) - warm_rss
    ok_ratio, ok_rss = ratio <= TARGET_RATIO, growth_max <= TARGET_RSS_MB
    ok_state = s.state_bytes == warm_state
    print(f"\nlate/early per-chunk engine time (median): {ratio:.3f} (wall {ratio_wall:.3f}, "
          f"10th percentile {ratio_p10:.3f}); "
          f"target <= {TARGET_RATIO}: {'met' if ok_ratio else 'MISSED'}")  # fmt: skip
    print(f"RSS after warm-up {warm_rss:.1f} MB, at end {rec.rss[-1]:.1f} MB (growth {growth_end:+.2f} MB, "
          f"max {growth_max:+.2f} MB); target <= {TARGET_RSS_MB:g} MB: "
          f"{'met' if ok_rss else 'MISSED'}")  # fmt: skip
    changes = ", ".join(f"{b} at {a:.1f} s" for a, b in states)
    print(f"state_bytes after warm-up {warm_state}, at end {s.state_bytes}: "
          f"{'equal' if ok_state else 'CHANGED'} (values: {changes})")  # fmt: skip
    return 0 if ok_ratio and ok_rss and ok_state else 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="tiny_small", help="tiny_small, tiny_wide, full-q4_k/q8_0/f16, a path")
    ap.add_argument("--minutes", type=float, default=30.0, help="minutes of audio to stream")
    ap.add_argument("--chunk-ms", type=int, default=500, help="feed size in ms")
    ap.add_argument("--delay-ms", type=int, default=480)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--warmup-s", type=float, default=60.0, help="audio seconds before the first window")
    ap.add_argument("--window", type=int, default=60, help="chunks per median window")
    ap.add_argument("--progress-s", type=float, default=60.0, help="audio s between progress lines")
    ap.add_argument("--max-wall-minutes", type=float, default=0.0, help="stop after this wall time (0: no)")
    ap.add_argument("--work-dir", type=Path, default=Path("/tmp/captionist-soak"))
    ap.add_argument("--model-dir", type=Path, default=Path("/tmp/vsynth-full"))
    args = ap.parse_args(argv)
    if args.chunk_ms < 1 or args.minutes <= 0 or args.window < 1:
        ap.error("--chunk-ms, --minutes and --window must be positive")
    return run(args, resolve_model(args.model, args.work_dir, args.model_dir))


if __name__ == "__main__":
    sys.exit(main())
