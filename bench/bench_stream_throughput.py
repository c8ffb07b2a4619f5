"""Streaming throughput: full-size ms per 80 ms token vs bounds; mid-size vs the reference's streaming.

    python bench/bench_stream_throughput.py --part full [--model-dir /tmp/vsynth-full] [--seconds 3]
    python bench/bench_stream_throughput.py --part mid [--work-dir /tmp/captionist-bench-mid]

``full``: for ``voxtral-synth-full-{q8_0,q4_k}.gguf`` (bench/make_synthetic_gguf.py), a live stream
(delay 480 ms) is warmed up on 1 s of speech_long.wav, then fed ``--seconds`` more in ``--chunk-ms``
feeds; the ``timings()`` difference gives ms per token split into mel (per 8 mel frames), conv
(per audio token; inside "encoder" when the engine does not report conv_ms apart), encoder +
projector (per audio token) and decoder (per position; one per call in steady state). Bounds
measured in the same run (bench/roofline.py): bytes read per decoder step / read bandwidth, and
FLOPs / numpy F32 matmul rate, for the decoder step and the encoder token. Then the same audio
is finished and compared with offline transcription (``Model.transcribe``'s engine path: one feed
of everything + finish, EOS ends) in engine ms per decoder position and wall seconds.
Targets: Q4_K <= 320 ms per token (>= 0.25x real time), within 2x of the larger bound, streaming
no slower per token than offline.

``mid``: the random mid-size model of bench/bench_offline_vs_reference.py (built and cached there).
The reference's streaming ``generate`` (input_features as a generator of 8-frame mel chunks,
exactly as tools/make_reference_fixtures.py does it; the processor runs inside the generator and
counts, like our mel) vs our live stream fed 480 ms pieces + finish (F32 and Q8_0), same clip and
thread count, warm-up + best of --repeats. Both decode to the length limit (EOS row zeroed).
"""

from __future__ import annotations

import os
import sys

from bench_full_size import _threads_from_argv

# BLAS / torch thread counts must be fixed before numpy loads.
_N = str(_threads_from_argv(sys.argv[1:]))
os.environ.update(OPENBLAS_NUM_THREADS=_N, OMP_NUM_THREADS=_N, MKL_NUM_THREADS=_N)

import argparse  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import soundfile as sf  # noqa: E402
from roofline import (  # noqa: E402
    decoder_step_flops,
    encoder_token_flops,
    matmul_gflops,
    read_bandwidth_gbs,
    step_costs,
)

from captionist import _engine  # noqa: E402
from captionist.engine import Model  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CLIP = ROOT / "tests/data/audio/speech_long.wav"
DELAY_TOKENS = 6
TOKEN_MS = 80.0
TARGET_Q4K_MS = 320.0


def _delta(a: dict[str, float], b: dict[str, float]) -> dict[str, float]:
    return {k: b[k] - a[k] for k in b}


def _engine_ms(t: dict[str, float]) -> float:
    return sum(v for k, v in t.items() if k.endswith("_ms"))


def split(d: dict[str, float]) -> dict[str, float]:
    """ms per token: mel per 8 mel frames, conv and encoder per audio token, decoder per position."""
    n_tok = max(1.0, d["n_audio_tokens"])
    conv = d.get("conv_ms")
    return {
        "mel": d["mel_ms"] / max(1.0, d["n_mel_frames"] / 8.0),
        "conv": float("nan") if conv is None else conv / n_tok,
        "encoder": d["audio_ms"] / n_tok,  # encoder + projector (+ conv when not reported apart)
        "decoder": d["decoder_ms"] / max(1.0, d["n_decoder_positions"]),
    }


def full_one(path: Path, n_threads: int, pcm: np.ndarray, seconds: float, chunk_ms: int) -> dict:
    m = Model(path, backend="cpu", n_threads=n_threads)
    warm, end, step = 16000, 16000 + int(16000 * seconds), 16 * chunk_ms
    clip = np.ascontiguousarray(pcm[:end])
    s = _engine.Stream(m._m, DELAY_TOKENS, False, False)
    t0 = time.perf_counter()
    s.feed(clip[:warm])
    before = s.timings()
    t1, c1 = time.perf_counter(), time.process_time()
    for a in range(warm, end, step):
        s.feed(clip[a : min(a + step, end)])
    wall = time.perf_counter() - t1
    cpu = (time.process_time() - c1) / wall
    steady = _delta(before, s.timings())
    s.finish()
    stream_wall = time.perf_counter() - t0
    stream_total = s.timings()
    o = _engine.Stream(m._m, DELAY_TOKENS, True, False)
    t0 = time.perf_counter()
    o.feed(clip)
    o.finish()
    offline_wall = time.perf_counter() - t0
    offline_total = o.timings()
    return {"info": m.info, "steady": steady, "wall": wall, "cpu": cpu,
            "stream_total": stream_total, "stream_wall": stream_wall,
            "offline_total": offline_total, "offline_wall": offline_wall}  # fmt: skip


def part_full(args: argparse.Namespace) -> bool:
    pcm, _ = sf.read(CLIP, dtype="float32")
    paths = [args.model_dir / f"voxtral-synth-full-{t}.gguf" for t in args.types.split(",")]
    missing = [p for p in paths if not p.exists()]
    if missing:
        raise SystemExit(f"error: {missing[0]} not found (run bench/make_synthetic_gguf.py --dims full)")
    bw, bw_how = read_bandwidth_gbs(args.threads)
    gflops = matmul_gflops()
    print(f"full size, {args.threads} threads, delay {80 * DELAY_TOKENS} ms, {args.chunk_ms} ms feeds, "
          f"{args.seconds:g} s after a 1 s warm-up; read bandwidth {bw:.1f} GB/s ({bw_how}); numpy F32 "
          f"matmul {gflops:.1f} GFLOP/s; load average {os.getloadavg()[0]:.2f}", flush=True)  # fmt: skip
    rows, ok = [], True
    for path in paths:
        r = full_one(path, args.threads, pcm, args.seconds, args.chunk_ms)
        info, d, c = r["info"], r["steady"], step_costs(path, r["info"])
        sp = split(d)
        total_pos = r["stream_total"]["n_decoder_positions"]  # context for the bounds: mid-run
        ctx = total_pos - d["n_decoder_positions"] / 2.0
        dec_bw = (c.dec_weight_bytes + ctx * c.kv_bytes_per_position) / (bw * 1e9) * 1e3
        dec_fl = decoder_step_flops(c, info, ctx) / (gflops * 1e9) * 1e3
        enc_ctx = min(info["encoder"]["sliding_window"], 4.0 * r["stream_total"]["n_audio_tokens"] / 2)
        enc_fl = encoder_token_flops(c, info, enc_ctx) / (gflops * 1e9) * 1e3
        batch = d["n_audio_tokens"] / max(1.0, d["n_audio_batches"])
        enc_bw = c.enc_weight_bytes / batch / (bw * 1e9) * 1e3
        conv = 0.0 if np.isnan(sp["conv"]) else sp["conv"]
        total = sp["mel"] + conv + sp["encoder"] + sp["decoder"]
        bound = max(dec_bw, dec_fl) + max(enc_bw, enc_fl)
        st, of = r["stream_total"], r["offline_total"]
        st_pos = _engine_ms(st) / st["n_decoder_positions"]
        of_pos = _engine_ms(of) / of["n_decoder_positions"]
        name = path.name.removeprefix("voxtral-synth-full-").removesuffix(".gguf")
        print(f"\n{name}: steady {args.seconds:g} s in {r['wall']:.1f} s (CPU use {r['cpu']:.2f} cores); "
              f"{d['n_decoder_positions']:.0f} positions in {d['n_decoder_calls']:.0f} calls, "
              f"{d['n_audio_tokens']:.0f} audio tokens in {d['n_audio_batches']:.0f} batches "
              f"(batch {batch:.1f}); "
              f"decoder bounds: bandwidth {dec_bw:.0f} ms, compute {dec_fl:.0f} ms; encoder bounds: compute "
              f"{enc_fl:.0f} ms, bandwidth {enc_bw:.0f} ms")  # fmt: skip
        print(f"  whole clip {clip_s(args):.1f} s: streaming {r['stream_wall']:.1f} s wall, "
              f"{st_pos:.1f} engine ms/position ({st['n_decoder_positions']:.0f}); offline "
              f"{r['offline_wall']:.1f} s wall, {of_pos:.1f} engine ms/position "
              f"({of['n_decoder_positions']:.0f}); streaming/offline per position {st_pos / of_pos:.2f}, "
              f"wall {r['stream_wall'] / r['offline_wall']:.2f}", flush=True)  # fmt: skip
        rows.append((name, sp, total, bound, st_pos / of_pos))
        ok &= total <= 2 * bound and st_pos <= of_pos * 1.05
        if name == "q4_k":
            ok &= total <= TARGET_Q4K_MS
    print("\n| type | mel | conv | encoder | decoder | total ms/token | RTF (80 ms / total) | bound ms/token "
          "(max per part) | total / bound | streaming / offline per position |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, sp, total, bound, so in rows:
        conv = "in encoder" if np.isnan(sp["conv"]) else f"{sp['conv']:.1f}"
        print(f"| {name} | {sp['mel']:.2f} | {conv} | {sp['encoder']:.1f} | {sp['decoder']:.1f} | "
              f"{total:.0f} | {TOKEN_MS / total:.3f} | {bound:.0f} | {total / bound:.2f} | "
              f"{so:.2f} |")  # fmt: skip
    print(f"targets: Q4_K <= {TARGET_Q4K_MS:g} ms/token, total <= 2x bound, streaming <= offline per "
          f"position (5% slack); {'met' if ok else 'MISSED'}; "
          f"load average {os.getloadavg()[0]:.2f}")  # fmt: skip
    return ok


def clip_s(args: argparse.Namespace) -> float:
    return 1.0 + args.seconds


def part_mid(args: argparse.Namespace) -> bool:
    import torch
    from bench_offline_vs_reference import best_of, mrf, prepare
    from transformers import VoxtralRealtimeForConditionalGeneration

    torch.set_num_threads(args.threads)
    args.work_dir.mkdir(parents=True, exist_ok=True)
    hf, f32, q8 = prepare(args.work_dir, args.threads)
    pcm, _ = sf.read(CLIP, dtype="float32")
    pcm = np.ascontiguousarray(pcm[: int(16000 * args.mid_seconds)])
    model = VoxtralRealtimeForConditionalGeneration.from_pretrained(hf, dtype=torch.float32).eval()
    ref = mrf.Reference(hf / "tekken.json")

    def reference() -> list[int]:
        first, chunks = ref.stream_chunks(pcm, DELAY_TOKENS)
        with torch.inference_mode():
            out = model.generate(input_ids=first["input_ids"], attention_mask=first["attention_mask"],
                                 input_features=chunks, num_delay_tokens=DELAY_TOKENS,
                                 do_sample=False)  # fmt: skip
        ids = out[0, first["input_ids"].shape[1] :].tolist()
        return ids[:-1] if ids and ids[-1] == mrf.EOS else ids

    print(f"mid model, clip {pcm.size / 16000:.2f} s, delay {80 * DELAY_TOKENS} ms, {args.threads} threads, "
          f"warm-up + best of {args.repeats}; load average {os.getloadavg()[0]:.2f}", flush=True)  # fmt: skip
    ref_s, ref_use, ref_ids = best_of(reference, args.repeats)
    n = len(ref_ids)
    print("| engine | tokens | seconds | ms/token | CPU use | speed-up vs reference streaming | agreement |")
    print("|---|---|---|---|---|---|---|")
    print(f"| reference streaming generate F32 | {n} | {ref_s:.2f} | {1e3 * ref_s / n:.1f} | {ref_use:.2f} "
          f"| 1.00 | |")  # fmt: skip
    ok = True
    for label, path in (("F32", f32), ("Q8_0", q8)):
        m = Model(path, backend="cpu", n_threads=args.threads)

        def ours(m: Model = m) -> list[int]:
            s = m.stream(delay_ms=80 * DELAY_TOKENS)
            step = 16 * args.mid_chunk_ms
            for a in range(0, pcm.size, step):
                s.feed(pcm[a : a + step])
            return s.finish().token_ids

        sec, use, ids = best_of(ours, args.repeats)
        diff = (i for i, (x, y) in enumerate(zip(ref_ids, ids, strict=False)) if x != y)
        same = next(diff, min(n, len(ids)))
        ok &= sec <= ref_s
        print(f"| captionist streaming {label} ({args.mid_chunk_ms} ms feeds) | {len(ids)} | {sec:.2f} | "
              f"{1e3 * sec / max(1, len(ids)):.1f} | {use:.2f} | {ref_s / sec:.2f} | first {same} of {n} "
              f"ids equal |")  # fmt: skip
    print(f"load average now {os.getloadavg()[0]:.2f}")
    return ok


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=("full", "mid", "both"), default="both")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--model-dir", type=Path, default=Path("/tmp/vsynth-full"))
    ap.add_argument("--types", default="q8_0,q4_k")
    ap.add_argument("--seconds", type=float, default=3.0, help="full: audio after the 1 s warm-up")
    ap.add_argument("--chunk-ms", type=int, default=480, help="full: feed size in ms")
    ap.add_argument("--work-dir", type=Path, default=Path("/tmp/captionist-bench-mid"))
    ap.add_argument("--mid-seconds", type=float, default=10.0, help="mid: clip length")
    ap.add_argument("--mid-chunk-ms", type=int, default=480, help="mid: our feed size in ms")
    ap.add_argument("--repeats", type=int, default=2, help="mid: timed runs after the warm-up")
    args = ap.parse_args(argv)
    if not 0 < args.seconds <= 15 or not 0 < args.mid_seconds <= 17:
        ap.error("--seconds must be in (0, 15] and --mid-seconds in (0, 17] (speech_long.wav is 17 s)")
    ok = True
    if args.part in ("full", "both"):
        ok &= part_full(args)
    if args.part in ("mid", "both"):
        ok &= part_mid(args)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
