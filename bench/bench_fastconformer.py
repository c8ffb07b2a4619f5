"""FastConformer RNN-T streaming: ms per chunk vs compute and bandwidth bounds, RTF, ours vs the reference.

    python bench/make_synthetic_fastconformer.py            # once: random full-size models (~4 min)
    python bench/bench_fastconformer.py                     # full run (~20 min on 2 cores)
    python bench/bench_fastconformer.py --quick             # one tiny configuration (< 1 min)

For each size x type x latency x thread count, one process (bench/fc_worker.py ``ours``) streams
``--seconds`` of speech-like audio in 10 ms feeds, timing only the engine calls; per chunk (one
encoder graph of lookahead + 1 frames) it reports encoder and decoder ms from ``timings()``, beside
the bounds for that chunk (bench/fc_costs.py): FLOPs / the numpy F32 matmul rate and weight bytes /
the read bandwidth, both measured at the start of the run with the same thread count (bench/roofline.py).
RTF = engine time / audio time. Per size x latency x thread count another process runs the reference
(transformers' cache-aware streaming ``generate``, float32, same weights and audio, ``/work/refenv``);
ours/reference = reference RTF / our RTF. Before each measurement the script waits (up to
``--max-wait`` s) for the 1-minute load average to fall to ``--quiet-load``; a row that started above
it is marked ``noisy``. Load averages are printed at the start and end of every measurement.

Targets: 0.6B at 560 ms, Q8_0, 2 threads: RTF <= 0.5; 120M at 160 ms, Q4_K, 2 threads: RTF <= 0.1
(Q8_0 shown beside it);
ours at 16 bits >= 3x the reference's streaming speed at every latency and thread count, where
"16 bits" is the faster of F16 and BF16 in each configuration: both are the reference's own F32
weights rounded to 16 bits (F16 keeps more mantissa, BF16 more range; CPUs with AVX512_BF16 or
ARM's BF16 instructions multiply BF16 twice as fast). The F16-only ratios are printed too. Exit
status 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from fc_costs import FcCosts, fc_costs
from make_synthetic_fastconformer import DEFAULT_OUT, SIZES, gguf_path, make_size, model_dir
from quiet_load import load1, wait_quiet

HERE = Path(__file__).resolve().parent
WORKER = HERE / "fc_worker.py"
REF_PYTHON = Path("/work/refenv/bin/python")
TYPES = ("f16", "bf16", "q8_0", "q4_k")
SIXTEEN_BIT = ("f16", "bf16")  # the reference's F32 weights rounded to 16 bits, two ways
FRAME_MS = 80
# The issue fixes Q8_0 for the 0.6B only; the 120M's target is taken at its fastest format (Q4_K,
# repacked kernels), and Q8_0 is printed beside it without deciding the exit status.
TARGET_RTF = {("0.6b", 560, "q8_0", 2): 0.5, ("120m", 160, "q4_k", 2): 0.1}
SHOWN_RTF = {("120m", 160, "q8_0", 2): 0.1}
TARGET_SPEEDUP = 3.0
TARGET_SIZES = ("0.6b", "120m")  # the speed-up target is not for the tiny script check


def worker_args(what: str, **options: object) -> list[str]:
    """fc_worker.py's command line: `what`, then ``--name value`` per option (``_`` -> ``-``)."""
    return [what] + [x for k, v in options.items() for x in (f"--{k.replace('_', '-')}", str(v))]


def run_worker(python: Path, args: list[str], timeout: float, env: dict[str, str] | None = None) -> dict:
    """One measurement in its own process (``env`` added to this one's environment); the last stdout
    line is its JSON (or an error record)."""
    cmd = [str(python), str(WORKER), *args]
    child_env = {**os.environ, **env} if env else None
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=HERE, env=child_env)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s: {' '.join(cmd)}"}
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        tail = " | ".join(p.stderr.strip().splitlines()[-3:])
        return {"error": f"exit {p.returncode}: {' '.join(cmd)}: {tail}"}
    return json.loads(lines[-1])


def measure(python: Path, args: list[str], opts: argparse.Namespace, label: str, repeat: int = 1) -> dict:
    """One measurement; with ``repeat`` > 1 the median run of that many (by compute time), the others'
    RTFs kept in ``repeats`` (2 threads on this VM vary by up to 1.5x from run to run)."""
    runs = []
    for _ in range(max(1, repeat)):
        start = wait_quiet(opts.quiet_load, opts.max_wait)
        r = run_worker(python, args, opts.timeout)
        r.update(load_before=start, load_after=load1(), noisy=start > opts.quiet_load)
        runs.append(r)
        if "error" in r:
            break
    if "error" not in runs[-1] and len(runs) > 1:
        runs.sort(key=lambda x: x["compute_s"])
        r = dict(runs[len(runs) // 2])
        r["repeats"] = [x["compute_s"] / x["audio_s"] for x in runs]
        r["noisy"] = any(x["noisy"] for x in runs)
    if "repeats" in r:
        print(f"  {label}: runs RTF {', '.join(f'{x:.3f}' for x in r['repeats'])} -> median", flush=True)
    if "error" in r:
        print(f"  {label}: ERROR {r['error']}", flush=True)
    else:
        print(
            f"  {label}: RTF {r['compute_s'] / r['audio_s']:.3f} ({r['compute_s']:.2f} s for "
            f"{r['audio_s']:.1f} s), load {start:.2f} -> {r['load_after']:.2f}"
            f"{' NOISY' if r['noisy'] else ''}",
            flush=True,
        )
    return r


def previous(opts: argparse.Namespace) -> dict[tuple, dict]:
    """Quiet, error-free measurements of an earlier (interrupted) run with the same audio length."""
    if not opts.json or not opts.json.exists():
        return {}
    data = json.loads(opts.json.read_text())
    keep: dict[tuple, dict] = {}
    for r in data["rows"]:
        keep[(r["size"], r["type"], r["latency_ms"], r["threads"])] = r
    for r in data["reference"]:
        size, lat, n = r["key"]
        keep[(size, "ref", lat, n)] = {k: v for k, v in r.items() if k != "key"}
    return {
        k: r
        for k, r in keep.items()
        if "error" not in r and not r["noisy"] and abs(r["audio_s"] - opts.seconds) < 1.5
    }


def latencies(costs_path: Path) -> list[int]:
    from gguf import GGUFReader

    field = GGUFReader(costs_path).fields["fastconformer.encoder.lookaheads"]
    lookaheads = [int(field.parts[i][0]) for i in field.data]
    return sorted((r + 1) * FRAME_MS for r in lookaheads)


def bounds(c: FcCosts, chunk: int, frames: float, tokens: float, roof: dict) -> dict[str, float]:
    """ms per encoder graph of `frames` frames emitting `tokens`: compute / bandwidth bounds of both parts."""
    enc_fl, dec_fl = c.chunk_flops(chunk, frames, tokens)
    enc_b, dec_b = c.chunk_bytes()
    to_ms_fl = 1e3 / (roof["matmul_gflops"] * 1e9)
    to_ms_b = 1e3 / (roof["bandwidth_gbs"] * 1e9)
    return {
        "enc_c": enc_fl * to_ms_fl,
        "enc_b": enc_b * to_ms_b,
        "dec_c": dec_fl * to_ms_fl,
        "dec_b": dec_b * to_ms_b,
    }


def row_figures(r: dict, c: FcCosts, roof: dict) -> dict[str, float]:
    t = r["timings"]
    n = max(1.0, t["n_encoder_batches"])
    chunk = r["latency_ms"] // FRAME_MS
    b = bounds(c, chunk, t["n_encoder_frames"] / n, t["n_tokens"] / n, roof)
    enc, dec = t["encoder_ms"] / n, t["decoder_ms"] / n
    bound = max(b["enc_c"], b["enc_b"]) + max(b["dec_c"], b["dec_b"])
    return {
        "chunks": n,
        "enc": enc,
        "dec": dec,
        "mel": t["mel_ms"] / n,
        "feed": 1e3 * r["compute_s"] / n,
        "bound": bound,
        "over": (enc + dec) / bound,
        "rtf": r["compute_s"] / r["audio_s"],
        "tpf": t["n_tokens"] / max(1.0, t["n_encoder_frames"]),
        **b,
    }


def print_table(rows: list[dict], refs: dict, costs: dict, roofs: dict) -> None:
    print(
        "\n| size | type | latency | thr | chunks | enc ms/chunk | enc bound compute / bw | dec ms/chunk "
        "| dec bound compute / bw | (enc+dec) / bound | mel ms/chunk | engine ms/chunk | RTF | tokens/frame "
        "| ref RTF | ours/ref | load start → end | |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        key = (r["size"], r["type"], r["latency_ms"], r["threads"])
        if "error" in r:
            print(f"| {' | '.join(map(str, key))} | error: {r['error'][:200]} |" + " |" * 13)
            continue
        f = row_figures(r, costs[(r["size"], r["type"])], roofs[r["threads"]])
        ref = refs.get((r["size"], r["latency_ms"], r["threads"]))
        ref_rtf = ref["compute_s"] / ref["audio_s"] if ref and "error" not in ref else None
        ref_cells = f"{ref_rtf:.3f} | {ref_rtf / f['rtf']:.2f}" if ref_rtf else "– | –"
        note = "noisy" if r["noisy"] or (ref and ref.get("noisy")) else ""
        print(
            f"| {r['size']} | {r['type']} | {r['latency_ms']} | {r['threads']} | {f['chunks']:.0f} | "
            f"{f['enc']:.1f} | {f['enc_c']:.1f} / {f['enc_b']:.1f} | {f['dec']:.2f} | "
            f"{f['dec_c']:.2f} / {f['dec_b']:.2f} | {f['over']:.2f} | {f['mel']:.2f} | {f['feed']:.1f} | "
            f"{f['rtf']:.3f} | "
            f"{f['tpf']:.2f} | {ref_cells} | {r['load_before']:.2f} → {r['load_after']:.2f} | {note} |"
        )


def print_reference(refs: dict) -> None:
    print(
        "\n| reference | latency | thr | chunks | ms/chunk | RTF | features share | tokens/frame | CPU use | "
        "load start → end | |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for (size, lat, thr), r in refs.items():
        if "error" in r:
            print(f"| {size} | {lat} | {thr} | error: {r['error'][:200]} | | | | | | | |")
            continue
        print(
            f"| {size} F32 | {lat} | {thr} | {r['n_chunks']} | {1e3 * r['compute_s'] / r['n_chunks']:.1f} | "
            f"{r['compute_s'] / r['audio_s']:.3f} | "
            f"{r['feature_s'] / r['compute_s']:.2f} | {r['n_tokens'] / max(1, r['n_frames']):.2f} | "
            f"{r['cpu_use']:.2f} | {r['load_before']:.2f} → {r['load_after']:.2f} | "
            f"{'noisy' if r['noisy'] else ''} |"
        )


def verdicts(rows: list[dict], refs: dict) -> bool:
    """Print PASS/FAIL per target; True when every measured target passed."""
    ok = True
    by_key = {(r["size"], r["latency_ms"], r["type"], r["threads"]): r for r in rows if "error" not in r}
    print()
    for key, limit in SHOWN_RTF.items():
        r = by_key.get(key)
        if r is not None:
            rtf = r["compute_s"] / r["audio_s"]
            what = f"{key[0]} at {key[1]} ms, {key[2].upper()}, {key[3]} threads"
            print(f"(also {what}: RTF {rtf:.3f}, bound {limit})")
    for key, limit in TARGET_RTF.items():
        r = by_key.get(key)
        what = f"{key[0]} at {key[1]} ms, {key[2].upper()}, {key[3]} threads: RTF <= {limit}"
        if r is None:
            print(f"target {what}: not measured")
            continue
        rtf = r["compute_s"] / r["audio_s"]
        ok &= rtf <= limit
        print(
            f"target {what}: {rtf:.3f} {'PASS' if rtf <= limit else 'FAIL'}{' (noisy)' if r['noisy'] else ''}"
        )
    ratios = []
    f16_only = []
    for (size, lat, thr), ref in refs.items():
        if "error" in ref or size not in TARGET_SIZES:
            continue
        ref_rtf = ref["compute_s"] / ref["audio_s"]
        ours = {t: by_key[(size, lat, t, thr)] for t in SIXTEEN_BIT if (size, lat, t, thr) in by_key}
        if not ours:
            continue
        best_t = min(ours, key=lambda t: ours[t]["compute_s"] / ours[t]["audio_s"])
        best = ours[best_t]
        ratios.append((ref_rtf / (best["compute_s"] / best["audio_s"]), size, lat, thr, best_t))
        if "f16" in ours:
            f16_only.append(ref_rtf / (ours["f16"]["compute_s"] / ours["f16"]["audio_s"]))
    if f16_only:
        n16 = sum(x >= TARGET_SPEEDUP for x in f16_only)
        low = min(f16_only)
        print(f"(F16 alone: {n16}/{len(f16_only)} configurations >= {TARGET_SPEEDUP:g}x, lowest {low:.2f}x)")
    if ratios:
        worst = min(ratios)
        passed = worst[0] >= TARGET_SPEEDUP
        ok &= passed
        n_pass = sum(x[0] >= TARGET_SPEEDUP for x in ratios)
        print(
            f"target ours (16-bit) >= {TARGET_SPEEDUP:g}x reference streaming speed: {n_pass}/{len(ratios)} "
            f"configurations; lowest {worst[0]:.2f}x ({worst[1]}, {worst[2]} ms, {worst[3]} threads, "
            f"{worst[4].upper()}) {'PASS' if passed else 'FAIL'}"
        )
    else:
        print(f"target ours (16-bit) >= {TARGET_SPEEDUP:g}x reference streaming speed: not measured")
    return ok


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help="cache folder of make_synthetic_fastconformer"
    )
    ap.add_argument("--sizes", default="0.6b,120m")
    ap.add_argument("--types", default=",".join(TYPES))
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--latencies", default="", help="ms, comma list (default: every latency of the model)")
    ap.add_argument("--seconds", type=float, default=20.0, help="audio per measurement")
    ap.add_argument("--no-reference", action="store_true")
    ap.add_argument("--ref-python", type=Path, default=REF_PYTHON)
    ap.add_argument("--quiet-load", type=float, default=0.6, help="1-minute load average a row may start at")
    ap.add_argument("--max-wait", type=float, default=90.0, help="s to wait for it before each measurement")
    ap.add_argument("--timeout", type=float, default=600.0, help="s per measurement")
    ap.add_argument("--bw-bytes", type=int, default=1 << 30)
    ap.add_argument("--json", type=Path, help="write every raw result here (after each measurement)")
    ap.add_argument(
        "--resume", action="store_true", help="keep the quiet, error-free measurements already in --json"
    )
    ap.add_argument(
        "--repeat", type=int, default=3, help="runs of each of our measurements; the median is kept (ref: 1)"
    )
    ap.add_argument("--quick", action="store_true", help="one tiny configuration (checks the scripts)")
    opts = ap.parse_args(argv)
    if opts.quick:
        opts.sizes, opts.types, opts.threads, opts.latencies = "tiny", "f16", "1", "560"
        opts.seconds, opts.max_wait, opts.bw_bytes = 3.0, 0.0, 1 << 26
    out = opts.out.expanduser()
    sizes = [s for s in opts.sizes.split(",") if s]
    types = [t for t in opts.types.split(",") if t]
    threads = [int(n) for n in opts.threads.split(",") if n]
    for size in sizes:
        if size == "tiny":
            make_size(out, size, list(TYPES), 0.25, 2)
        missing = [gguf_path(out, size, t) for t in types if not gguf_path(out, size, t).exists()]
        if size not in SIZES or missing:
            print(
                f"error: {missing[0] if missing else size} not found; run "
                f"bench/make_synthetic_fastconformer.py --sizes {size} --out {out}",
                file=sys.stderr,
            )
            return 2
    reference = not opts.no_reference and opts.ref_python.exists()
    t_start = time.time()
    print(
        f"FastConformer streaming bench: {opts.seconds:g} s of speech-like audio in 10 ms feeds per "
        f"measurement; sizes {sizes}, types {types}, threads {threads}; reference "
        f"{'on' if reference else 'off'}; load average now {load1():.2f}",
        flush=True,
    )

    roofs = {}
    for n in threads:
        start = wait_quiet(opts.quiet_load, opts.max_wait)
        r = run_worker(
            Path(sys.executable), worker_args("roofline", threads=n, bw_bytes=opts.bw_bytes), opts.timeout
        )
        if "error" in r:
            print(f"error: roofline: {r['error']}", file=sys.stderr)
            return 2
        roofs[n] = r
        print(
            f"  {n} thread(s): read bandwidth {r['bandwidth_gbs']:.1f} GB/s ({r['bandwidth_how']}), "
            f"numpy F32 matmul {r['matmul_gflops']:.1f} GFLOP/s; load {start:.2f} -> {r['load_end']:.2f}",
            flush=True,
        )

    rows, refs, costs = [], {}, {}
    done = previous(opts) if opts.resume else {}

    def save() -> None:
        if opts.json:
            refs_list = [{"key": list(k), **v} for k, v in refs.items()]
            opts.json.write_text(
                json.dumps({"roofline": roofs, "rows": rows, "reference": refs_list}, indent=1)
            )

    def run(python: Path, args: list[str], label: str, key: tuple) -> dict:
        if key in done:
            print(f"  {label}: kept from {opts.json}", flush=True)
            return done[key]
        return measure(python, args, opts, label, opts.repeat if key[1] != "ref" else 1)

    for size in sizes:
        info = json.loads((model_dir(out, size) / "synth.json").read_text())
        for t in types:
            costs[(size, t)] = fc_costs(gguf_path(out, size, t))
            mb = costs[(size, t)].weight_bytes / 1e6
            print(
                f"{size} {t}: {mb:.0f} MB of weights, {info['n_params'] / 1e6:.1f} M parameters, blank bias "
                f"{info['blank_bias']:.3f} ({info['tokens_per_frame']:.2f} tokens/frame at calibration)"
            )
        lats = latencies(gguf_path(out, size, types[0]))
        if opts.latencies:
            lats = [x for x in lats if str(x) in opts.latencies.split(",")]
        for lat in lats:
            for n in threads:
                for t in types:
                    args = worker_args("ours", model=gguf_path(out, size, t), latency=lat, threads=n,
                                       seconds=opts.seconds)  # fmt: skip
                    r = run(Path(sys.executable), args, f"{size} {t} {lat} ms {n} thr", (size, t, lat, n))
                    rows.append({"size": size, "type": t, "latency_ms": lat, "threads": n, **r})
                    save()
                if reference:
                    args = worker_args("ref", hf=model_dir(out, size) / "hf", latency=lat, threads=n,
                                       seconds=opts.seconds)  # fmt: skip
                    label = f"{size} reference {lat} ms {n} thr"
                    refs[(size, lat, n)] = run(opts.ref_python, args, label, (size, "ref", lat, n))
                    save()

    print(
        "\nread bandwidth / F32 matmul per thread count: "
        + "; ".join(
            f"{n}: {r['bandwidth_gbs']:.1f} GB/s, {r['matmul_gflops']:.1f} GFLOP/s" for n, r in roofs.items()
        )
    )
    features = sorted({r.get("cpu_features", "") for r in rows if "error" not in r} - {""})
    print("ggml CPU backend: " + ("; ".join(features) if features else "unknown"))
    print_table(rows, refs, costs, roofs)
    if refs:
        print_reference(refs)
    ok = verdicts(rows, refs)
    n_noisy = sum(r.get("noisy", False) for r in rows + list(refs.values()))
    print(
        f"\n{len(rows) + len(refs)} measurements in {(time.time() - t_start) / 60:.1f} min, {n_noisy} noisy "
        f"(load > {opts.quiet_load} at start); load average now {load1():.2f}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
