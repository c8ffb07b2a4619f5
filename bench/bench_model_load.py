"""Model load time and memory: ours (with and without the repack cache) vs transcribe.cpp 0.4.1.

    python bench/bench_model_load.py [--model-dir DIR] [--types f16,q8_0,q4_k] [--threads 2]
        [--repeats 3] [--seconds 3]

Each load is a fresh child process (the protocol of vs_tcpp_job.py: load timed, a warm-up stream,
then a timed stream over ``--seconds`` of speech-like audio), started once the machine is quiet:

- ``theirs``: transcribe.cpp on its export of the same weights (bench_vs_transcribe_cpp.py writes
  it; ``--no-theirs`` skips it);
- ``ours``: no repack cache: Q4_K matrices repacked by ggml at every load;
- ``ours, cache written``: the cache folder emptied first, so this load repacks and writes it;
- ``ours, cache used``: later loads, which map the cache.

Per row (medians of ``--repeats`` fresh processes; the cache-written row runs once): load seconds, the
warm-up stream (mapped weights fault their pages in during the first steps, so a load that maps
defers some cost there), the timed stream, and memory after the run: anonymous (the engine's own
buffers; repacked weights without a cache live here) and file-backed (mapped weights). The token ids
of every ours row must be the same (the cache changes no number); the last column says so.
Model files are read once first so no row pays for a cold page cache.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench_vs_transcribe_cpp import exported, model_paths, read_through, write_clip
from quiet_load import wait_quiet
from vs_tcpp_job import Job, ours_env, run_child

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve().parent


HEADER = (
    f"{'type':6} {'engine':22} {'load s':>7} {'warm-up s':>9} {'stream s':>8} "
    f"{'anon MB':>8} {'file MB':>8}  ids"
)


def run(
    args: argparse.Namespace, script: str, python: str, job: Job, n: int, env: dict[str, str]
) -> list[dict[str, Any]]:
    """``n`` fresh children of ``script``, each started once the machine is quiet."""
    results = []
    for _ in range(n):
        start = wait_quiet(args.quiet_load, args.max_wait)
        results.append({**run_child(python, HERE / script, job, env, 3600.0), "load1_start": start})
    return results


def row(kind: str, name: str, results: list[dict[str, Any]], ids_note: str) -> None:
    load_s, warm_s, wall_s = (
        statistics.median(r[k] for r in results) for k in ("load_s", "warmup_s", "wall_s")
    )
    r = results[0]
    loads = ",".join(f"{x['load1_start']:.2f}" for x in results)
    state = r.get("info", {}).get("repack_cache", "")
    label = name + (f" ({state})" if state and state != "none" else "")
    print(
        f"{kind:6} {label:22} {load_s:7.3f} {warm_s:9.2f} {wall_s:8.2f} "
        f"{r['rss_anon_mb']:8.0f} {r['rss_file_mb']:8.0f}  {ids_note} [{loads}]",
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model-dir", type=Path, default=Path.home() / ".cache/captionist-bench/voxtral")
    ap.add_argument("--dims", default="full", choices=("full", "mid"))
    ap.add_argument("--types", default="f16,q8_0,q4_k")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3, help="fresh processes per row (median kept)")
    ap.add_argument("--seconds", type=float, default=3.0, help="audio of the timed stream")
    ap.add_argument("--no-theirs", action="store_true", help="skip transcribe.cpp")
    ap.add_argument("--venv-python", default="/work/tcppenv/bin/python", help="transcribe.cpp's Python")
    ap.add_argument("--quiet-load", type=float, default=0.6)
    ap.add_argument("--max-wait", type=float, default=120.0)
    args = ap.parse_args(argv)
    types = [t.strip() for t in args.types.split(",") if t.strip()]
    paths = model_paths(args.model_dir, args.dims, types)
    if missing := [p for p in paths if not p.exists()]:
        print(f"error: {missing[0]} not found; see bench/make_synthetic_gguf.py", file=sys.stderr)
        return 2
    theirs_ok = not args.no_theirs and Path(args.venv_python).exists()
    print(
        f"{os.cpu_count()} CPUs, {args.threads} threads; load median of {args.repeats} fresh processes; "
        f"load average before each run in brackets",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="bench-load-") as tmp:
        clip = write_clip(Path(tmp), args.seconds)
        cache = Path(tmp) / "repacked"
        env = {**ours_env(ROOT), "OMP_NUM_THREADS": str(args.threads)}
        print(HEADER)
        for kind, path in zip(types, paths, strict=True):
            read_through(path)
            job = Job(model=str(path), audio=str(clip), mode="stream", threads=args.threads, delay_tokens=6)
            if theirs_ok:
                their_path = exported(path, args.model_dir / "transcribe-cpp")
                read_through(their_path)
                j = Job(**{**asdict(job), "model": str(their_path)})
                row(
                    kind,
                    "transcribe.cpp",
                    run(args, "vs_tcpp_theirs.py", args.venv_python, j, args.repeats, env),
                    "-",
                )
            plain = run(args, "vs_tcpp_ours.py", sys.executable, job, args.repeats, env)
            want = plain[0]["ids"]
            row(kind, "ours, no cache", plain, "ref" if all(r["ids"] == want for r in plain) else "DIFFERENT")
            shutil.rmtree(cache, ignore_errors=True)
            cached_job = Job(**{**asdict(job), "repack_cache": str(cache)})
            first = run(args, "vs_tcpp_ours.py", sys.executable, cached_job, 1, env)
            row(kind, "ours, cache", first, "same" if first[0]["ids"] == want else "DIFFERENT")
            later = run(args, "vs_tcpp_ours.py", sys.executable, cached_job, args.repeats, env)
            row(kind, "ours, cache", later, "same" if all(r["ids"] == want for r in later) else "DIFFERENT")
            size = sum(p.stat().st_size for p in cache.glob("*.repack")) / 1e9 if cache.exists() else 0.0
            if size:
                print(f"{kind:6} {'':22} repack cache file: {size:.2f} GB", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
