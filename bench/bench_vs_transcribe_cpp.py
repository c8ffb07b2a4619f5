"""CPU speed, side by side: our engine vs transcribe.cpp 0.4.1 on the same full-size random weights.

    python bench/bench_vs_transcribe_cpp.py [--model-dir DIR] [--types f16,q8_0,q4_k] [--threads 1,2]
        [--modes stream,offline] [--seconds 10] [--variant-gain haswell] [--json out.json]

Needs transcribe.cpp in its own virtual environment (``--venv-python``, default /work/tcppenv):
``python3 -m venv /work/tcppenv && /work/tcppenv/bin/pip install transcribe-cpp==0.4.1 numpy``.

Models: ``DIR/voxtral-synth-<dims>-<type>.gguf`` from bench/make_synthetic_gguf.py (``--make`` runs it
for missing files: about 8 minutes and 16 GB for the three full-size types), each exported once to
``DIR/transcribe-cpp/<same name>`` by tools/export_transcribe_cpp_gguf.py ``--id-vocab``: the same
tensor bytes (quantized ones copied, not requantized) in transcribe.cpp's layout, its vocabulary
spelling token ids so the two outputs can be compared id by id.

Per cell (type x threads x mode) each engine runs in a fresh child process (vs_tcpp_ours.py under this
Python, vs_tcpp_theirs.py under the venv; the protocol is vs_tcpp_job.py), with the
same thread count and the same ``--seconds`` of bench/speechlike.py audio (seed 1). The child loads
the model (timed), warms up on the first ``--warmup-s`` of the clip (a whole throw-away stream, or
one offline run on that audio), reads the load average and then times:

- ``stream``: a live stream at ``--delay-ms`` (480 ms = 6 tokens) fed in ``--feed-ms`` blocks
  (default 80 ms), then finished. transcribe.cpp's stream is told to process every feed
  (``min_decode_interval_ms=0``, ``--their-min-decode-ms``; its own default is 1000 ms, i.e. it
  would batch a second of audio per pass, which a live caption at 480 ms cannot wait for);
- ``offline``: transcribe.cpp's ``run()`` (fixed at 30 delay tokens in 0.4.1) vs our
  ``Model.transcribe`` at 2400 ms with ``stop_at_end_of_utterance=True`` (transcribe.cpp ends at the
  first EOS; without one, both decode to the end of the audio).

Reported per cell: wall time of the timed part, throughput ratio ours/theirs = their time / our time
(target >= 1.2), load time, peak RSS, the 1-minute load average read just before each timed part,
the ggml CPU variant each process loaded, and whether both emitted the same ids (equal work).
``--variant-gain NAME`` runs ours once more per cell with ``CAPTIONIST_CPU_VARIANT=NAME`` (e.g.
``haswell``, the AVX2 build, against the default pick, e.g. ``zen4``) and prints that gain;
``--cpu-variant NAME`` sets it for every run of ours; ``--repack-cache DIR`` has ours load as the app
does, with the repack cache there (its first Q4_K load writes it; see bench_model_load.py). Both
engines memory-map the weights; the files
are read once before each type's cells so neither pays for a cold page cache.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from quiet_load import wait_quiet
from speechlike import SpeechLike
from vs_tcpp_job import SAMPLE_RATE, TOKEN_MS, Job, ours_env, run_child

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve().parent
EXPORTER = ROOT / "tools/export_transcribe_cpp_gguf.py"
TARGET = 1.2
OFFLINE_DELAY_TOKENS = 30


@dataclass
class Cell:
    type: str
    threads: int
    mode: str
    ours: dict[str, Any]
    theirs: dict[str, Any]
    ours_alt: dict[str, Any] | None = None  # ours under --variant-gain's variant

    @property
    def ratio(self) -> float:
        return float(self.theirs["wall_s"]) / float(self.ours["wall_s"])

    @property
    def same_ids(self) -> str:
        """Whether both did the same work: the same emitted ids, or how they differ."""
        a, b = self.ours["ids"], self.theirs["ids"]
        if a == b:
            return f"same ({len(a)})"
        k = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
        return f"{len(a)} / {len(b)}, same for the first {k}"

    @property
    def variant_gain(self) -> float | None:
        """Time on the alternative variant / time on the default one; None if not run or not honoured."""
        alt = self.ours_alt
        if alt is None or alt["cpu_variant"] == self.ours["cpu_variant"]:
            return None
        return float(alt["wall_s"]) / float(self.ours["wall_s"])


def model_paths(model_dir: Path, dims: str, types: list[str]) -> list[Path]:
    return [model_dir / f"voxtral-synth-{dims}-{t}.gguf" for t in types]  # make_synthetic_gguf's names


def make_missing(model_dir: Path, dims: str, types: list[str]) -> None:
    env = {**os.environ, **ours_env(ROOT)}
    cmd = [
        sys.executable,
        str(HERE / "make_synthetic_gguf.py"),
        "--dims",
        dims,
        "--out",
        str(model_dir),
        "--types",
        ",".join(types),
    ]
    subprocess.run(cmd, check=True, env=env)


def exported(src: Path, export_dir: Path) -> Path:
    """transcribe.cpp's copy of ``src`` (``--id-vocab``), written when missing or older than ``src``."""
    dst = export_dir / src.name
    if not dst.exists() or dst.stat().st_mtime < src.stat().st_mtime:
        export_dir.mkdir(parents=True, exist_ok=True)
        print(f"exporting {src.name} for transcribe.cpp ...", flush=True)
        subprocess.run([sys.executable, str(EXPORTER), str(src), str(dst), "--id-vocab"], check=True)
    return dst


def read_through(path: Path) -> None:
    """Read a file once so its pages are cached for both engines' memory maps."""
    buf = bytearray(1 << 24)
    with path.open("rb", buffering=0) as f:
        while f.readinto(buf):
            pass


def write_clip(out: Path, seconds: float) -> Path:
    n = int(seconds * SAMPLE_RATE)
    pcm = np.concatenate(list(SpeechLike(seed=1).chunks(SAMPLE_RATE, n)))[:n].astype(np.float32)
    path = out / "speechlike.npy"
    np.save(path, pcm)
    return path


def child_env(threads: int, variant: str | None) -> dict[str, str]:
    env = {k: str(threads) for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
    if variant:
        env["CAPTIONIST_CPU_VARIANT"] = variant
    return env


def run_cell(
    args: argparse.Namespace,
    kind: str,
    ours_path: Path,
    theirs_path: Path,
    clip: Path,
    threads: int,
    mode: str,
    ours_first: bool,
) -> Cell:
    stream = mode == "stream"
    job = Job(
        model="",
        audio=str(clip),
        mode=mode,
        threads=threads,
        delay_tokens=args.delay_ms // TOKEN_MS if stream else OFFLINE_DELAY_TOKENS,
        feed_ms=args.feed_ms,
        warmup_s=args.warmup_s,
        their_min_decode_ms=args.their_min_decode_ms,
        their_kv_type=args.their_kv_type,
        stop_at_eos=True,
        repack_cache=str(args.repack_cache or ""),
    )

    def ours(variant: str | None) -> dict[str, Any]:
        j = Job(**{**asdict(job), "model": str(ours_path)})
        env = {**ours_env(ROOT), **child_env(threads, variant)}
        return best(lambda: run_child(sys.executable, HERE / "vs_tcpp_ours.py", j, env, args.timeout))

    def theirs() -> dict[str, Any]:
        j = Job(**{**asdict(job), "model": str(theirs_path)})
        env = child_env(threads, None)
        return best(lambda: run_child(args.venv_python, HERE / "vs_tcpp_theirs.py", j, env, args.timeout))

    def best(run: Any) -> dict[str, Any]:
        """The fastest of ``--repeats`` fresh processes, each started once the machine is quiet."""
        results = []
        for _ in range(args.repeats):
            start = wait_quiet(args.quiet_load, args.max_wait)
            results.append({**run(), "load1_start": start})
        return min(results, key=lambda r: r["wall_s"])

    if ours_first:
        a = ours(args.cpu_variant)
        b = theirs()
    else:
        b = theirs()
        a = ours(args.cpu_variant)
    alt = ours(args.variant_gain) if args.variant_gain else None
    return Cell(kind, threads, mode, a, b, alt)


def _rss(r: dict[str, Any]) -> str:
    return f"{r['maxrss_mb']:.0f} ({r['rss_anon_mb']:.0f})"


def _loads(r: dict[str, Any]) -> str:
    """The 1-minute load average at the child's start and just before its timed part."""
    return f"{r['load1_start']:.2f} -> {r['load1_before']:.2f}"


def print_cell(c: Cell) -> None:
    o, t = c.ours, c.theirs
    verdict = "PASS" if c.ratio >= TARGET else "FAIL"
    print(
        f"  {c.type} {c.threads}t {c.mode}: ours {o['wall_s']:.2f} s (load1 {_loads(o)}, "
        f"{o['cpu_s'] / o['wall_s']:.2f} cores, {o['cpu_variant']}), transcribe.cpp {t['wall_s']:.2f} s "
        f"(load1 {_loads(t)}, {t['cpu_s'] / t['wall_s']:.2f} cores, {t['cpu_variant']}) -> "
        f"{c.ratio:.2f}x {verdict}; ids {c.same_ids}",
        flush=True,
    )
    if c.ours_alt is not None:
        a, gain = c.ours_alt, c.variant_gain
        what = (
            f"{o['cpu_variant']} is {gain:.2f}x as fast"
            if gain is not None
            else "CAPTIONIST_CPU_VARIANT was not honoured (same variant loaded): no gain measured"
        )
        print(f"    ours on {a['cpu_variant']}: {a['wall_s']:.2f} s (load1 {_loads(a)}): {what}")
    for note in t.get("notes", []):
        print(f"    note: {note}")


def print_table(cells: list[Cell], seconds: float, quiet_load: float) -> None:
    alt = any(c.ours_alt is not None for c in cells)
    head = (
        "| type | threads | mode | ours s | transcribe.cpp s | ours/theirs | ≥ 1.2 | load s ours / theirs "
        "| peak RSS MB (anonymous at end) ours / theirs | load1 at start ours / theirs "
        "| CPU variant ours / theirs | ids |"
    )
    if alt:
        head += " ours on alt. variant s | variant gain |"
    print("\n" + head)
    print("|" + "---|" * (head.count("|") - 1))
    for c in cells:
        o, t = c.ours, c.theirs
        row = (
            f"| {c.type} | {c.threads} | {c.mode} | {o['wall_s']:.2f} | {t['wall_s']:.2f} | {c.ratio:.2f} | "
            f"{'PASS' if c.ratio >= TARGET else 'FAIL'} | {o['load_s']:.2f} / {t['load_s']:.2f} | "
            f"{_rss(o)} / {_rss(t)} | "
            f"{o['load1_start']:.2f} / {t['load1_start']:.2f} | "
            f"{o['cpu_variant']} / {t['cpu_variant']} | {c.same_ids} |"
        )
        if alt and c.ours_alt is not None:
            a, gain = c.ours_alt, c.variant_gain
            row += f" {a['wall_s']:.2f} ({a['cpu_variant']}) | {'—' if gain is None else f'{gain:.2f}'} |"
        print(row)
    n_pass = sum(c.ratio >= TARGET for c in cells)
    runs = [r for c in cells for r in (c.ours, c.theirs, c.ours_alt) if r is not None]
    noisy = sum(r["load1_start"] > quiet_load for r in runs)
    print(
        f"\n{n_pass} of {len(cells)} cells at >= {TARGET}x transcribe.cpp's throughput "
        f"({seconds:g} s of audio per run); {noisy} of {len(runs)} runs started above load {quiet_load}"
    )
    gains = [g for c in cells if (g := c.variant_gain) is not None]
    if gains:
        mean = float(np.exp(np.mean(np.log(gains))))
        print(
            f"ours on the default CPU variant vs --variant-gain: {mean:.2f}x "
            f"(geometric mean, {len(gains)} cells)"
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model-dir", type=Path, default=Path.home() / ".cache/captionist-bench/voxtral")
    ap.add_argument("--dims", default="full", choices=("full", "mid"), help="which synthetic files")
    ap.add_argument("--make", action="store_true", help="write missing model files (make_synthetic_gguf)")
    ap.add_argument(
        "--export-dir", type=Path, help="transcribe.cpp's files (default MODEL_DIR/transcribe-cpp)"
    )
    ap.add_argument("--types", default="f16,q8_0,q4_k")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--modes", default="stream,offline")
    ap.add_argument("--seconds", type=float, default=10.0, help="audio per timed run")
    ap.add_argument("--warmup-s", type=float, default=1.0, help="audio of the warm-up run")
    ap.add_argument("--feed-ms", type=int, default=80, help="stream block size, both engines")
    ap.add_argument("--delay-ms", type=int, default=480, help="stream delay (80 ms steps)")
    ap.add_argument("--repeats", type=int, default=1, help="fresh processes per engine and cell; best kept")
    ap.add_argument(
        "--their-min-decode-ms", type=int, default=0, help="transcribe.cpp stream decode interval"
    )
    ap.add_argument(
        "--their-kv-type",
        default="auto",
        choices=("auto", "f16", "f32"),
        help="transcribe.cpp's KV cache (auto = its default, F16; ours is F32)",
    )
    ap.add_argument(
        "--repack-cache", type=Path, metavar="DIR", help="ours loads with this repack cache (as the app does)"
    )
    ap.add_argument("--cpu-variant", help="CAPTIONIST_CPU_VARIANT for every run of ours")
    ap.add_argument("--variant-gain", metavar="NAME", help="also run ours on this ggml CPU variant (haswell)")
    ap.add_argument("--venv-python", default="/work/tcppenv/bin/python", help="transcribe.cpp's Python")
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds per child process")
    ap.add_argument("--quiet-load", type=float, default=0.6, help="1-minute load average a run may start at")
    ap.add_argument("--max-wait", type=float, default=120.0, help="seconds to wait for --quiet-load")
    ap.add_argument("--no-read-through", action="store_true", help="skip reading the files before timing")
    ap.add_argument("--json", type=Path, help="write all results here")
    args = ap.parse_args(argv)
    types = [t.strip() for t in args.types.split(",") if t.strip()]
    threads = [int(t) for t in args.threads.split(",")]
    modes = [m.strip() for m in args.modes.split(",")]
    if bad := [m for m in modes if m not in ("stream", "offline")]:
        ap.error(f"unknown mode {bad[0]!r}: stream or offline")
    if args.delay_ms % TOKEN_MS or not 1 <= args.delay_ms // TOKEN_MS <= 30:
        ap.error("--delay-ms must be a multiple of 80 ms, 80 to 2400")
    if not Path(args.venv_python).exists():
        print(
            f"error: {args.venv_python} not found: pip install transcribe-cpp==0.4.1 numpy in a venv",
            file=sys.stderr,
        )
        return 2
    paths = model_paths(args.model_dir, args.dims, types)
    if missing := [p for p in paths if not p.exists()]:
        if not args.make:
            print(
                f"error: {missing[0]} not found; run python bench/make_synthetic_gguf.py --dims {args.dims} "
                f"--out {args.model_dir} --types {args.types} (or pass --make)",
                file=sys.stderr,
            )
            return 2
        make_missing(args.model_dir, args.dims, types)
    export_dir = args.export_dir or args.model_dir / "transcribe-cpp"

    print(
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs; {args.seconds:g} s of "
        f"speech-like audio, warm-up {args.warmup_s:g} s; stream delay {args.delay_ms} ms fed in "
        f"{args.feed_ms} ms blocks; offline at {OFFLINE_DELAY_TOKENS * TOKEN_MS} ms; "
        f"transcribe.cpp KV {args.their_kv_type}, decode interval {args.their_min_decode_ms} ms",
        flush=True,
    )
    cells: list[Cell] = []
    with tempfile.TemporaryDirectory(prefix="vs-tcpp-") as tmp:
        clip = write_clip(Path(tmp), args.seconds)
        for kind, ours_path in zip(types, paths, strict=True):
            theirs_path = exported(ours_path, export_dir)
            if not args.no_read_through:
                for p in (ours_path, theirs_path):
                    read_through(p)
            print(
                f"\n{ours_path.name} ({ours_path.stat().st_size / 1e9:.2f} GB) vs "
                f"{theirs_path.relative_to(theirs_path.parent.parent)}",
                flush=True,
            )
            for n in threads:
                for mode in modes:
                    c = run_cell(
                        args, kind, ours_path, theirs_path, clip, n, mode, ours_first=len(cells) % 2 == 0
                    )
                    print_cell(c)
                    cells.append(c)
    print_table(cells, args.seconds, args.quiet_load)
    if args.json:
        rows = [{**asdict(c), "ratio": c.ratio} for c in cells]
        args.json.write_text(
            json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, "cells": rows}, indent=1) + "\n"
        )
    return 0 if all(c.ratio >= TARGET for c in cells) else 1


if __name__ == "__main__":
    sys.exit(main())
