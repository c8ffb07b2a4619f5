"""The matrix products of a Voxtral stream step, timed in our ggml and in transcribe.cpp's.

Why: streaming in 80 ms blocks, every block is one decoder step (each product has 1 column) and one
encoder token (4 frames: 4 columns), and at those widths both engines' time is ggml's CPU kernels
(bench/README.md, "Voxtral vs transcribe.cpp 0.4.1"). This compiles ``ggml_matmul_probe.cpp`` once
against each ggml build (ours: the pinned ``libggml-python``; theirs: the modules bundled in
``transcribe-cpp-native``), runs each product shape in a fresh process per build, alternating, and
prints the medians and their ratio. The shapes are the real model's:

- decoder step: W 3072 -> 9216 (the FFN's up/gate products), 1 column;
- encoder token: W 1280 -> 5120 (the encoder FFN), 4 columns;
- ``--columns`` adds other widths of the encoder shape (2, 8, 16 ...).

``--split`` (ours only) asks why the encoder product is slow: its measured time against its weight
read alone (the 1-column product, same bytes) and its arithmetic alone (the same product on a matrix
small enough to stay in the cache, scaled to the full size). A sum means the kernel waits for memory,
then computes; the max would mean it overlaps them.

16 different weight matrices per graph, so they are read from memory, as in a real step. Both
builds load their best CPU module (the line shows which).

    python bench/bench_ggml_kernels.py [--venv-python /work/tcppenv/bin/python] [--types f32,f16,q8_0]
        [--threads 1,2] [--columns 4] [--repeat 3] [--seconds 2]
    python bench/bench_ggml_kernels.py --split --types f16,q8_0 --threads 1,2 --columns 4

Needs a C++17 compiler and transcribe.cpp's venv (bench_vs_transcribe_cpp.py's setup).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import statistics
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from quiet_load import load1, wait_quiet  # noqa: E402

TYPES = {"f32": 0, "f16": 1, "q8_0": 8, "q4_k": 12}
DECODER = (3072, 9216)
ENCODER = (1280, 5120)


@dataclass(frozen=True)
class Build:
    name: str
    lib_dir: Path
    include_dir: Path
    link: list[str]


def ours() -> Build:
    import libggml

    root = Path(libggml.__file__).parent
    return Build("ours", root / "lib", root / "include", ["-lggml", "-lggml-base"])


def theirs(venv_python: str) -> Build:
    code = "import transcribe_cpp_native, os; print(os.path.dirname(transcribe_cpp_native.__file__))"
    out = subprocess.run([venv_python, "-c", code], check=True, capture_output=True, text=True).stdout
    lib = Path(out.strip()) / "_native"
    if not (lib / "libggml-base.so").exists():
        raise SystemExit(f"no ggml in {lib}")
    # transcribe.cpp ships no ggml headers; the probe uses only calls whose form is the same in both
    return Build("transcribe.cpp", lib, ours().include_dir, ["-l:libggml.so", "-l:libggml-base.so"])


def ggml_version(b: Build) -> str:
    """The version string ggml compiles into libggml-base (what ggml_version() returns)."""
    text = (b.lib_dir / "libggml-base.so").read_bytes()
    m = re.search(rb"\x00(\d+\.\d+\.\d+)\x00", text)
    return m.group(1).decode() if m else "?"


def compile_probe(b: Build, cache: Path) -> Path:
    src = HERE / "ggml_matmul_probe.cpp"
    key = hashlib.sha1(src.read_bytes() + str(b.lib_dir).encode()).hexdigest()[:12]
    exe = cache / f"probe-{key}"
    if not exe.exists():
        cache.mkdir(parents=True, exist_ok=True)
        cmd = ["c++", "-O2", "-std=c++17", str(src), f"-I{b.include_dir}", f"-L{b.lib_dir}", *b.link,
               f"-Wl,-rpath,{b.lib_dir}", "-o", str(exe) + ".tmp"]  # fmt: skip
        subprocess.run(cmd, check=True)
        os.replace(str(exe) + ".tmp", exe)
    return exe


def run_probe(
    exe: Path, b: Build, k: int, m: int, n: int, type_id: int, threads: int, seconds: float, mats: int = 16
) -> tuple[float, float, str]:
    """ms per product, the weight matrix's bytes, the CPU module loaded. ``mats`` weight matrices per
    graph: 16 are read from memory; a few small ones stay in the cache (the kernel's arithmetic alone)."""
    env = {**os.environ, "GGML_VK_VISIBLE_DEVICES": ""}  # CPU only: no Vulkan device probing
    cmd = [exe, b.lib_dir, k, m, n, type_id, threads, mats, seconds]
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env, timeout=300)
    if proc.returncode != 0:
        raise SystemExit(f"{b.name} probe failed: {proc.stderr[-500:]}")
    ms = float(re.search(r"ms=([\d.]+)", proc.stdout).group(1))
    weight_bytes = float(re.search(r"bytes=(\d+)", proc.stdout).group(1))
    variant = re.search(r"loaded CPU backend from .*?libggml-cpu-?([\w-]*)\.so", proc.stderr)
    return ms, weight_bytes, (variant.group(1) or "cpu") if variant else "?"


# the in-cache products: 8 matrices of 256 rows (0.3-0.7 MB each at the encoder's K: 2.8-5.2 MB in
# all, inside L2 / L3); fewer leave 2 threads waiting on each other more than computing
IN_CACHE_ROWS, IN_CACHE_MATS = 256, 8


def split(args: argparse.Namespace, b: Build, exe: Path) -> None:
    """Our build only: is an encoder product's time its weight read and its arithmetic one after the
    other, or overlapped? Read time = the 1-column product from memory (the same bytes, little
    arithmetic); arithmetic = the n-column product at the in-cache rate (small matrices that stay in
    the cache), scaled to the full size."""
    print("| columns | type | threads | measured ms | read ms (1 column) | arithmetic ms (in cache) "
          "| read + arithmetic | max of the two | load |", flush=True)  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    k, m = ENCODER
    for threads in map(int, args.threads.split(",")):
        for tname in args.types.split(","):
            for n in map(int, args.columns.split(",")):
                load = wait_quiet(args.quiet_load, args.max_wait)
                t = TYPES[tname]
                measured, read, small = (
                    statistics.median(
                        run_probe(exe, b, k, rows, cols, t, threads, args.seconds, mats)[0]
                        for _ in range(args.repeat)
                    )
                    for rows, cols, mats in ((m, n, 16), (m, 1, 16), (IN_CACHE_ROWS, n, IN_CACHE_MATS))
                )
                arith = small * m / IN_CACHE_ROWS
                print(f"| {n} | {tname} | {threads} | {measured:.3f} | {read:.3f} | {arith:.3f} | "
                      f"{read + arith:.3f} | {max(read, arith):.3f} | {load:.2f} |", flush=True)  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--venv-python", default="/work/tcppenv/bin/python", help="transcribe.cpp's Python")
    ap.add_argument("--types", default="f32,f16,q8_0")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--columns", default="4", help="widths of the encoder shape to time")
    ap.add_argument("--repeat", type=int, default=3, help="runs per build and shape (median kept)")
    ap.add_argument("--seconds", type=float, default=2.0, help="timed seconds per run")
    ap.add_argument("--quiet-load", type=float, default=0.6)
    ap.add_argument("--max-wait", type=float, default=60.0)
    ap.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "captionist-bench" / "probe")
    ap.add_argument("--split", action="store_true", help="ours only: an encoder product's read vs arithmetic")
    ap.add_argument(
        "--repack", action="store_true", help="weights in the repacking buffer, as a load puts them"
    )
    args = ap.parse_args(argv)
    if args.repack:
        os.environ["PROBE_REPACK"] = "1"  # read by the probe (inherited through run_probe's environment)
    if args.split:
        b = ours()
        print(f"ggml: ours {ggml_version(b)}; load average {load1():.2f}", flush=True)
        split(args, b, compile_probe(b, args.cache))
        return 0

    builds = [ours(), theirs(args.venv_python)]
    exes = {b.name: compile_probe(b, args.cache) for b in builds}
    print(f"ggml: ours {ggml_version(builds[0])}, transcribe.cpp {ggml_version(builds[1])}; "
          f"load average {load1():.2f}", flush=True)  # fmt: skip
    shapes = [("decoder step", *DECODER, 1)] + [
        ("encoder token" if n == 4 else "encoder", *ENCODER, n) for n in map(int, args.columns.split(","))
    ]
    print("| shape | K -> M | columns | type | threads | ours ms | transcribe.cpp ms | theirs/ours "
          "| ours GB/s | modules | load |", flush=True)  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for threads in map(int, args.threads.split(",")):
        for tname in args.types.split(","):
            for label, k, m, n in shapes:
                load = wait_quiet(args.quiet_load, args.max_wait)
                times: dict[str, list[float]] = {b.name: [] for b in builds}
                variants: dict[str, str] = {}
                for _ in range(args.repeat):
                    for b in builds:
                        ms, weight_bytes, variants[b.name] = run_probe(
                            exes[b.name], b, k, m, n, TYPES[tname], threads, args.seconds
                        )
                        times[b.name].append(ms)
                mine, other = (statistics.median(times[b.name]) for b in builds)
                print(f"| {label} | {k} -> {m} | {n} | {tname} | {threads} | {mine:.3f} | {other:.3f} | "
                      f"{other / mine:.2f} | {weight_bytes / mine / 1e6:.1f} | {variants['ours']} / "
                      f"{variants['transcribe.cpp']} | {load:.2f} |", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
