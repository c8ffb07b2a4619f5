"""One-column products, ggml's loop against our kernels: one stream timed with each rule, in turns.

    B=~/.cache/captionist-bench
    python bench/bench_one_column_rule.py voxtral $B/voxtral/voxtral-synth-full-q8_0.gguf \
        [--threads 1] [--pairs 3] [--seconds 10]
    python bench/bench_one_column_rule.py fastconformer $B/fastconformer-0.6b/q8_0.gguf \
        --latency 80 [--threads 1] [--pairs 3] [--seconds 10]

``CAPTIONIST_ONE_COLUMN=ggml`` / ``=ours`` decides where a product of a weight with one column goes
(``column_kernels_min_columns()`` in engine/src/column_products.cpp; by default ours on Intel CPUs,
ggml elsewhere). A Voxtral decoder step is such a product for every weight, and so is every encoder
product of a FastConformer at 80 ms (one frame per chunk). Each pair runs the stream once under each
rule, each run in a fresh process, the order swapped from one pair to the next, every run started
once the 1-minute load average has fallen to ``--quiet-load`` (or stopped falling):

- voxtral: bench/vs_tcpp_ours.py, ``--seconds`` of speech-like audio streamed at 480 ms delay in
  80 ms feeds after a 1 s warm-up; the seconds are the timed run's wall time;
- fastconformer: bench/fc_worker.py ``ours``, ``--seconds`` of speech-like audio in 10 ms feeds after
  a 2 s warm-up stream; the seconds are the time spent in the engine's calls.

Prints every run with the load average it started at, each rule's best and the gain (ggml's best
over ours). The machine must be otherwise idle; speeds of shared VMs drift between runs, which is
why the rules take turns instead of running one after the other.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from bench_fastconformer import run_worker, worker_args
from bench_vs_transcribe_cpp import write_clip
from quiet_load import load1, wait_quiet
from vs_tcpp_job import Job, ours_env, run_child

HERE = Path(__file__).resolve().parent
RULES = ("ggml", "ours")
VOXTRAL_DELAY_TOKENS = 6  # 480 ms, the delay of bench_vs_transcribe_cpp's stream cells


def time_voxtral(model: Path, rule: str, opts: argparse.Namespace, clip: Path) -> float:
    job = Job(str(model), str(clip), "stream", threads=opts.threads, delay_tokens=VOXTRAL_DELAY_TOKENS)
    env = {**ours_env(HERE.parent), "CAPTIONIST_ONE_COLUMN": rule, "OMP_NUM_THREADS": str(opts.threads)}
    return float(run_child(sys.executable, HERE / "vs_tcpp_ours.py", job, env, opts.timeout)["wall_s"])


def time_fastconformer(model: Path, rule: str, opts: argparse.Namespace) -> float:
    args = worker_args("ours", model=model, latency=opts.latency, threads=opts.threads, seconds=opts.seconds)
    env = {**ours_env(HERE.parent), "CAPTIONIST_ONE_COLUMN": rule}
    out = run_worker(Path(sys.executable), args, opts.timeout, env)
    if "error" in out:
        raise RuntimeError(out["error"])
    return float(out["compute_s"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("family", choices=("voxtral", "fastconformer"))
    ap.add_argument("model", type=Path)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=10.0, help="audio per timed run")
    ap.add_argument("--latency", type=int, default=80, help="fastconformer: ms")
    ap.add_argument("--quiet-load", type=float, default=0.6, help="1-minute load average a run may start at")
    ap.add_argument("--max-wait", type=float, default=90.0, help="s to wait for it before each run")
    ap.add_argument("--timeout", type=float, default=1800.0, help="s per run")
    opts = ap.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # each run's line as it ends
    if not opts.model.is_file():
        sys.exit(f"{opts.model}: no such file (see make_synthetic_gguf.py, make_synthetic_fastconformer.py)")
    what = f"{opts.family} {opts.model.name}, {opts.threads} thread(s), {opts.seconds:g} s of audio"
    if opts.family == "fastconformer":
        what += f", {opts.latency} ms"
    print(f"{what}; load at the start {load1():.2f}", flush=True)

    with tempfile.TemporaryDirectory() as tmp:
        clip = write_clip(Path(tmp), opts.seconds)
        times: dict[str, list[float]] = {rule: [] for rule in RULES}
        for pair in range(opts.pairs):
            for rule in RULES if pair % 2 == 0 else RULES[::-1]:
                load = wait_quiet(opts.quiet_load, opts.max_wait)
                if opts.family == "voxtral":
                    seconds = time_voxtral(opts.model, rule, opts, clip)
                else:
                    seconds = time_fastconformer(opts.model, rule, opts)
                times[rule].append(seconds)
                print(f"  pair {pair + 1}, one column in {rule}: {seconds:.2f} s (load {load:.2f})")
    best = {rule: min(v) for rule, v in times.items()}
    for rule in RULES:
        print(f"{rule}: best {best[rule]:.2f} s of {', '.join(f'{t:.2f}' for t in times[rule])}")
    print(f"gain of our kernels on one column (ggml's best / ours): {best['ggml'] / best['ours']:.2f}x")
    print(f"load at the end {load1():.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
