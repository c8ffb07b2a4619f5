"""Offline transcription time: our engine vs the ``transformers`` reference, same mid-size model and threads.

    python bench/bench_offline_vs_reference.py [--threads 2] [--seconds 10] [--work-dir DIR]

Builds (once, cached in --work-dir) a random ``VoxtralRealtimeForConditionalGeneration`` with the
``mid`` dims of bench/dims.py (about a quarter of the real model), saves it with ``save_pretrained``
plus a synthetic tekken.json, converts it with ``captionist.convert`` to F32 and quantizes that to
Q8_0. Then times, on the first ``--seconds`` of tests/data/audio/speech_long.wav at delay 480 ms:
the reference offline ``generate`` (F32, greedy, processor-padded input exactly as
tools/make_reference_fixtures.py does; the processor's time is reported apart and not counted) and
``Model.transcribe`` (mel included) for the F32 and Q8_0 files. Each is warmed up once, then the
best of 3 runs counts. Both sides generate the same number of tokens: the EOS row of the tied
embedding is zero, so the EOS logit is exactly 0 while some other logit of 32768 is always higher,
and both decode to the length limit (n_audio_tokens - prompt); the script checks the counts.
Targets: >= 2x at F32, >= 4x with Q8_0.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import soundfile as sf
import torch
from dims import hf_config_dicts, model_params
from synthetic_tekken import write_tekken

from captionist.convert import convert_checkpoint
from captionist.engine import Model, quantize

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import make_reference_fixtures as mrf  # noqa: E402

CLIP = ROOT / "tests/data/audio/speech_long.wav"
DELAY_TOKENS = 6
SEED = 5
TARGETS = {"F32": 2.0, "Q8_0": 4.0}


def best_of(fn: Callable[[], object], repeats: int = 3) -> tuple[float, float, object]:
    """Warm up once, then (best wall seconds of `repeats` runs, CPU cores used in that run, last result).

    CPU use well below the thread count means other processes took the cores during the run.
    """
    result = fn()
    best, use = float("inf"), 0.0
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        result = fn()
        wall = time.perf_counter() - t0
        if wall < best:
            best, use = wall, (time.process_time() - c0) / wall
    return best, use, result


def build_checkpoint(hf_dir: Path) -> None:
    """Random mid-size model (seeded), EOS embedding row zeroed, saved with save_pretrained."""
    audio, text = hf_config_dicts("mid")
    vocab = model_params("mid").dec_n_vocab
    model = mrf.build_model({"seed": SEED, "audio": audio, "text": text}, vocab)
    with torch.no_grad():
        model.model.language_model.embed_tokens.weight[mrf.EOS] = 0.0
    model.save_pretrained(hf_dir, safe_serialization=True)
    write_tekken(hf_dir / "tekken.json", vocab)


def prepare(work: Path, n_threads: int) -> tuple[Path, Path, Path]:
    hf, f32, q8 = work / "hf", work / "mid-f32.gguf", work / "mid-q8_0.gguf"
    if not (hf / "model.safetensors").exists():
        print(f"building the mid-size reference checkpoint in {hf}", flush=True)
        build_checkpoint(hf)
    if not f32.exists():
        convert_checkpoint(hf, f32, "f32", progress=False)
    if not q8.exists():
        quantize(f32, q8, "Q8_0", n_threads)
    return hf, f32, q8


def run_reference(hf: Path, pcm: np.ndarray) -> tuple[float, float, float, list[int]]:
    """(generate seconds, its CPU use, processor seconds, generated ids without EOS) of the reference."""
    from transformers import VoxtralRealtimeForConditionalGeneration

    model = VoxtralRealtimeForConditionalGeneration.from_pretrained(hf, dtype=torch.float32).eval()
    ref = mrf.Reference(hf / "tekken.json")
    proc_s, _, inputs = best_of(lambda: ref.offline_inputs(pcm, DELAY_TOKENS))

    def generate() -> torch.Tensor:
        with torch.inference_mode():
            return model.generate(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"],
                                  input_features=inputs["input_features"], num_delay_tokens=DELAY_TOKENS,
                                  do_sample=False)  # fmt: skip

    seconds, use, out = best_of(generate)
    ids = out[0, inputs["input_ids"].shape[1] :].tolist()
    if ids and ids[-1] == mrf.EOS:
        ids = ids[:-1]
    limit = inputs["input_features"].shape[-1] // 8 - inputs["input_ids"].shape[1]
    if len(ids) != limit:
        raise RuntimeError(f"reference generated {len(ids)} tokens, expected the length limit {limit}")
    return seconds, use, proc_s, ids


def run_ours(path: Path, pcm: np.ndarray, n_threads: int) -> tuple[float, float, list[int]]:
    model = Model(path, backend="cpu", n_threads=n_threads)
    seconds, use, t = best_of(lambda: model.transcribe(pcm, delay_ms=80 * DELAY_TOKENS))
    return seconds, use, list(t.token_ids)  # type: ignore[attr-defined]


def _agree(a: list[int], b: list[int]) -> str:
    same = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    return f"ids equal to the reference for the first {same} of {len(a)}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work-dir", type=Path, default=Path("/tmp/captionist-bench-mid"))
    ap.add_argument("--seconds", type=float, default=10.0, help="length of the clip (from speech_long.wav)")
    ap.add_argument("--threads", type=int, default=2, help="threads for both engines")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    args.work_dir.mkdir(parents=True, exist_ok=True)
    hf, f32, q8 = prepare(args.work_dir, args.threads)
    pcm, _ = sf.read(CLIP, dtype="float32")
    pcm = np.ascontiguousarray(pcm[: int(16000 * args.seconds)])
    p = model_params("mid")
    print(f"mid model: encoder {p.enc_n_layer}x{p.enc_n_embd}, decoder {p.dec_n_layer}x{p.dec_n_embd} "
          f"(ff {p.dec_n_ff}, vocab {p.dec_n_vocab}); clip {pcm.size / 16000:.2f} s; "
          f"delay {80 * DELAY_TOKENS} ms; {args.threads} threads; warm-up + best of 3")  # fmt: skip

    ref_s, ref_use, proc_s, ref_ids = run_reference(hf, pcm)
    n = len(ref_ids)
    print(f"\nreference (transformers {_version('transformers')}, torch {torch.__version__}, F32): "
          f"processor {proc_s:.2f} s (not counted)")  # fmt: skip
    print("| engine | tokens | seconds | ms/token | CPU use | speed-up vs reference | target | agreement |")
    print("|---|---|---|---|---|---|---|---|")
    ms = 1e3 * ref_s / n
    print(f"| reference generate F32 | {n} | {ref_s:.2f} | {ms:.1f} | {ref_use:.2f} | 1.00 | | |")
    ok = True
    for label, path in (("F32", f32), ("Q8_0", q8)):
        s, use, ids = run_ours(path, pcm, args.threads)
        if len(ids) != n:
            raise RuntimeError(f"our {label} run generated {len(ids)} tokens, the reference {n}")
        ratio = ref_s / s
        ok &= ratio >= TARGETS[label]
        print(f"| captionist {label} | {len(ids)} | {s:.2f} | {1e3 * s / n:.1f} | {use:.2f} | {ratio:.2f} | "
              f">= {TARGETS[label]:g} | {_agree(ref_ids, ids)} |")  # fmt: skip
    verdict = "all targets met" if ok else "TARGET MISSED"
    print(f"load average now {os.getloadavg()[0]:.1f} ({os.cpu_count()} cores); {verdict}")
    return 0 if ok else 1


def _version(package: str) -> str:
    from importlib.metadata import version

    return version(package)


if __name__ == "__main__":
    sys.exit(main())
