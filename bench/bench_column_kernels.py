"""Our few-column product kernels against ggml_mul_mat, on the shapes of a streaming step.

Why: a stream multiplies every encoder weight by a few columns per step (Voxtral: 4 frames per
80 ms; FastConformer: its chunk), where ggml 0.20.2's tiles compute while their memory reads wait
(bench_ggml_kernels.py --split). engine/src/column_kernels.h reads each weight block once for all
the columns; this measures both on the same weights in one process, through
``_engine.weight_product`` (the engine's own graph and custom op, the CPU backend ggml picked).

Each product reads ``--megabytes`` of weights (copies of one matrix, more than the caches hold) per
run; the figure is weight bytes read per second, best of ``--repeat`` runs, ggml and our levels
alternating. Ratios are against ggml in the same row.

    python bench/bench_column_kernels.py [--types f16,q8_0] [--threads 1,2] [--columns 1,2,4,8,16]
        [--shapes 1280x5120,5120x1280] [--megabytes 300] [--repeat 3]

Columns of 1 show ggml's one-column kernel (a decoder step). Ours take them only on Intel CPUs,
where ggml's one-row loop stalls below the memory's speed; ``CAPTIONIST_ONE_COLUMN=ours`` measures
them elsewhere (``=ggml`` leaves one column to ggml on Intel too).
"""

from __future__ import annotations

import argparse
import os

import numpy as np

from captionist import _engine

BYTES_PER_WEIGHT = {"f16": 2.0, "q8_0": 34 / 32}


def rates(
    w: np.ndarray, x: np.ndarray, kind: str, levels: list[str], threads: int, copies: int, repeat: int
) -> dict[str, float]:
    """GB/s of weights read per level ("ggml" and ours): the best of `repeat` runs, levels alternating."""
    best = dict.fromkeys(levels, float("inf"))
    for _ in range(repeat):
        for lv in levels:
            _, seconds = _engine.weight_product(w, x, kind, lv, threads, copies, 1)
            best[lv] = min(best[lv], seconds)
    return {lv: copies * w.size * BYTES_PER_WEIGHT[kind] / s / 1e9 for lv, s in best.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--types", default="f16,q8_0")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--columns", default="1,2,4,8,16")
    ap.add_argument("--shapes", default="1280x5120,5120x1280", help="k x m: input width x output rows")
    ap.add_argument("--megabytes", type=float, default=300.0, help="weights read per product run")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)

    found = _engine.column_kernel_levels()
    levels = [lv["name"] for lv in found]
    most = {(lv["name"], kind): lv[f"{kind}_max_columns"] for lv in found for kind in BYTES_PER_WEIGHT}
    fewest = found[0]["min_columns"] if found else 2  # 1 on Intel CPUs (CAPTIONIST_ONE_COLUMN=ours / ggml)
    print(f"load average {os.getloadavg()[0]:.2f}; kernel levels on this CPU: {', '.join(levels) or 'none'}")
    rng = np.random.default_rng(0)
    ours_head = " | ".join(f"{lv} GB/s (x ggml)" for lv in levels)
    print(f"| type | k x m | threads | columns | ggml GB/s | {ours_head} |")
    print("|---" * (5 + len(levels)) + "|")
    for kind in args.types.split(","):
        for shape in args.shapes.split(","):
            k, m = (int(v) for v in shape.split("x"))
            w = (rng.standard_normal((m, k)) * 0.05).astype(np.float32)
            copies = max(1, round(args.megabytes * 1e6 / (w.size * BYTES_PER_WEIGHT[kind])))
            for threads in (int(t) for t in args.threads.split(",")):
                for n in (int(c) for c in args.columns.split(",")):
                    x = rng.standard_normal((n, k)).astype(np.float32)
                    ours = [lv for lv in levels if fewest <= n <= most[lv, kind]]
                    r = rates(w, x, kind, ["ggml", *ours], threads, copies, args.repeat)
                    base = r["ggml"]
                    cells = [f"{r[lv]:.1f} ({r[lv] / base:.2f})" if lv in r else "—" for lv in levels]
                    print(f"| {kind} | {shape} | {threads} | {n} | {base:.1f} | " + " | ".join(cells) + " |")
    print(f"load average {os.getloadavg()[0]:.2f} at the end")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
