"""How long a new Voxtral stream takes to get going: the first seconds of a live stream, fed in
80 ms blocks, timed for fresh streams on one loaded model, with the silent start copied (the
engine's default, once the model's first stream has saved it) and computed
(CAPTIONIST_NO_SILENCE_CACHE=1). See engine/src/models/voxtral/voxtral_silence.h.

    python bench/bench_stream_start.py ~/.cache/captionist-bench/voxtral/voxtral-synth-full-q4_k.gguf

Per stream: the wall time of feeding the first --seconds of audio (the encoder's silent tokens and
the prompt come first, then one token per block), the time until its first decoder output (the
first block after which the decoder has run), and the counters of what was copied. The two kinds
of stream alternate (--rounds of each, best kept), each run starting at a quiet load (bench's
quiet_load). The first stream of the process saves the start and is not counted.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
from quiet_load import wait_quiet
from speechlike import SAMPLE_RATE, SpeechLike

from captionist import engine

BLOCK = SAMPLE_RATE * 80 // 1000


def one_stream(m: engine.Model, pcm: np.ndarray, delay_ms: int, copy: bool) -> dict[str, float]:
    if copy:
        os.environ.pop("CAPTIONIST_NO_SILENCE_CACHE", None)
    else:
        os.environ["CAPTIONIST_NO_SILENCE_CACHE"] = "1"  # read when the stream is made
    t0 = time.perf_counter()
    s = m.stream(delay_ms=delay_ms)
    first_output = None
    for i in range(0, len(pcm), BLOCK):
        s.feed(pcm[i : i + BLOCK])
        if first_output is None and s.timings()["n_decoder_calls"] > 0:
            first_output = time.perf_counter() - t0
    wall = time.perf_counter() - t0
    t = s.timings()
    os.environ.pop("CAPTIONIST_NO_SILENCE_CACHE", None)
    return {
        "wall_s": wall,
        "first_output_s": first_output if first_output is not None else float("nan"),
        "tokens_copied": t["n_silence_tokens_restored"],
        "positions_copied": t["n_silence_positions_restored"],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", type=Path, help="a Voxtral GGUF")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=1.0, help="audio fed per stream")
    ap.add_argument("--delay-ms", type=int, default=480)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--quiet-load", type=float, default=0.6)
    ap.add_argument("--max-wait", type=float, default=60.0)
    args = ap.parse_args(argv)
    pcm = np.concatenate(list(SpeechLike(seed=1).chunks(SAMPLE_RATE, int(SAMPLE_RATE * args.seconds))))
    t0 = time.perf_counter()
    m = engine.Model(args.model, backend="cpu", n_threads=args.threads)
    print(f"{args.model.name}: loaded in {time.perf_counter() - t0:.2f} s, {args.threads} threads, "
          f"{args.seconds:g} s fed in 80 ms blocks at delay {args.delay_ms} ms", flush=True)  # fmt: skip
    one_stream(m, pcm, args.delay_ms, copy=True)  # the model's first stream: saves the start
    best: dict[bool, dict[str, float]] = {}
    print("| silent start | wall s | first output s | tokens / positions copied | load |")
    print("|---|---|---|---|---|")
    for _ in range(args.rounds):
        for copy in (False, True):
            load = wait_quiet(args.quiet_load, args.max_wait)
            r = one_stream(m, pcm, args.delay_ms, copy)
            label = "copied" if copy else "computed"
            copied = f"{r['tokens_copied']:.0f} / {r['positions_copied']:.0f}"
            row = f"| {label} | {r['wall_s']:.2f} | {r['first_output_s']:.2f} | {copied} | {load:.2f} |"
            print(row, flush=True)
            if copy not in best or r["wall_s"] < best[copy]["wall_s"]:
                best[copy] = r
    c, k = best[False], best[True]
    print(f"best of {args.rounds}: the first {args.seconds:g} s take {c['wall_s']:.2f} s computed, "
          f"{k['wall_s']:.2f} s copied ({c['wall_s'] / k['wall_s']:.2f}x); first output after "
          f"{c['first_output_s']:.2f} s / {k['first_output_s']:.2f} s")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
