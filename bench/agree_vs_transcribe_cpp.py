"""Do our engine and transcribe.cpp emit the same tokens from the same weights? (tiny models)

    python bench/agree_vs_transcribe_cpp.py [--models tiny_wide,tiny_small] [--types f32,f16,q8_0,q4_k]
        [--delays 1,6,30] [--feeds 80,160] [--venv-python /work/tcppenv/bin/python]

The check behind bench_vs_transcribe_cpp.py's export: the reference tiny models (tests/data/reference)
are converted to our GGUF (F32, F16 from the checkpoint; Q8_0 / Q4_K with our quantizer), exported
with tools/export_transcribe_cpp_gguf.py ``--id-vocab``, and both engines run each case in their own
child process (vs_tcpp_ours.py / vs_tcpp_theirs.py, the same children the speed bench times):

- offline: our ``Model.transcribe`` at 2400 ms vs transcribe.cpp's ``run()`` (fixed at 30 tokens),
  on speech_short, speech_long and 10 s of bench/speechlike.py audio (pauses of digital silence:
  the tiny models emit EOS there);
- stream: delay d fed in b ms blocks, then finished, on the same clips.

Per case: the normal-token ids of both (control tokens never reach transcribe.cpp's text), the first
index where they differ and the feed (step) in which it was emitted, and where the committed ids
fixture has the case (expected.json, F32) whether each engine equals the reference.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from speechlike import SpeechLike
from vs_tcpp_job import SAMPLE_RATE, Job, ours_env, run_child

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve().parent
REFERENCE = ROOT / "tests/data/reference"
AUDIO = ROOT / "tests/data/audio"
EXPORTER = ROOT / "tools/export_transcribe_cpp_gguf.py"
CLIPS = ("speech_short.wav", "speech_long.wav", "speechlike10s")
N_SPECIAL = 1000  # tekken control ids of the fixtures


@dataclass
class Case:
    model: str
    kind: str
    clip: str
    mode: str
    delay: int
    feed_ms: int


def make_models(out: Path, models: list[str], kinds: list[str]) -> dict[tuple[str, str], tuple[Path, Path]]:
    """(ours, theirs) GGUF per (model, kind), made in ``out``."""
    script = (
        "import sys; from pathlib import Path; from captionist.convert import convert_checkpoint; "
        "from captionist.engine import quantize\n"
        "src, out, kind = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]\n"
        "if kind in ('f32', 'f16', 'bf16'): convert_checkpoint(src, out, kind, progress=False)\n"
        "else: quantize(Path(sys.argv[4]), out, kind.upper())\n"
    )
    made = {}
    for model in models:
        for kind in ["f32", *[k for k in kinds if k != "f32"]]:
            ours = out / f"{model}.{kind}.gguf"
            theirs = out / f"{model}.{kind}.tcpp-ids.gguf"
            src = REFERENCE / model / "hf"
            args = [sys.executable, "-c", script, str(src), str(ours), kind, str(out / f"{model}.f32.gguf")]
            subprocess.run(args, check=True, env={**os.environ, **ours_env(ROOT)})
            subprocess.run(
                [sys.executable, str(EXPORTER), str(ours), str(theirs), "--id-vocab"],
                check=True,
                capture_output=True,
            )
            made[(model, kind)] = (ours, theirs)
    return made


def write_clips(out: Path) -> dict[str, Path]:
    import soundfile as sf

    paths = {}
    for clip in CLIPS:
        if clip == "speechlike10s":
            pcm = np.concatenate(list(SpeechLike(seed=1).chunks(SAMPLE_RATE, SAMPLE_RATE * 10)))
        else:
            pcm, _ = sf.read(AUDIO / clip, dtype="float32")
        paths[clip] = out / f"{clip}.npy"
        np.save(paths[clip], pcm.astype(np.float32))
    return paths


def reference_ids(model: str, clip: str, mode: str, delay: int) -> list[int] | None:
    expected = json.loads((REFERENCE / model / "expected.json").read_text())
    table = expected["cases"] if mode == "offline" else expected["stream_cases"]
    for c in table:
        if c["clip"] == clip and c["delay_tokens"] == delay:
            return [i for i in c["token_ids"] if i >= N_SPECIAL]
    return None


def first_difference(a: list[int], b: list[int]) -> int | None:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def step_of(steps: list[int], index: int) -> int | None:
    """The feed (0-based) after which token ``index`` had been emitted; None if only at the finish."""
    for k, n in enumerate(steps):
        if n > index:
            return k
    return None


def run_case(case: Case, files: tuple[Path, Path], clip: Path, python: str, kv_type: str) -> dict[str, Any]:
    job = Job(
        model="",
        audio=str(clip),
        mode=case.mode,
        threads=1,
        delay_tokens=case.delay,
        feed_ms=case.feed_ms,
        warmup_s=1.0,
        record_steps=case.mode == "stream",
        their_kv_type=kv_type,
    )
    ours = run_child(sys.executable, HERE / "vs_tcpp_ours.py", _with(job, files[0]), ours_env(ROOT), 600)
    theirs = run_child(python, HERE / "vs_tcpp_theirs.py", _with(job, files[1]), {}, 600)
    a, b = ours["ids"], theirs["ids"]
    row: dict[str, Any] = {**case.__dict__, "n_ours": len(a), "n_theirs": len(b)}
    # transcribe.cpp ends its output at the first end of utterance (EOS); ours reports it and goes on.
    eos = ours["eos_after"]
    row["their_eos_stop"] = stopped = eos is not None and len(b) < len(a) and eos[0] <= len(b) <= eos[1]
    row["first_diff"] = diff = first_difference(a[: len(b)] if stopped else a, b)
    if case.mode == "stream" and diff is not None:
        row["step_ours"], row["step_theirs"] = step_of(ours["steps"], diff), step_of(theirs["steps"], diff)
    elif case.mode == "stream":  # same ids: emitted after the same feeds?
        steps_ours = [min(n, len(b)) for n in ours["steps"]]
        if steps_ours != theirs["steps"]:
            row["timing_diff_step"] = first_difference(steps_ours, theirs["steps"])
    ref = reference_ids(case.model, case.clip, case.mode, case.delay) if case.kind == "f32" else None
    if ref is not None:
        row["ours_eq_ref"] = ours["ids"] == ref
        row["theirs_eq_ref"] = theirs["ids"] == ref
    return row


def _with(job: Job, model: Path) -> Job:
    return Job(**{**job.__dict__, "model": str(model)})


def cases(models: list[str], kinds: list[str], delays: list[int], feeds: list[int]) -> list[Case]:
    out = []
    for model in models:
        for kind in kinds:
            for clip in CLIPS:
                out.append(Case(model, kind, clip, "offline", 30, 0))
                out += [Case(model, kind, clip, "stream", d, b) for d in delays for b in feeds]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="tiny_wide,tiny_small")
    ap.add_argument("--types", default="f32,f16,q8_0,q4_k")
    ap.add_argument("--delays", default="1,6,30", help="stream delays in tokens (80 ms)")
    ap.add_argument("--feeds", default="80,160", help="stream block sizes in ms")
    ap.add_argument("--venv-python", default="/work/tcppenv/bin/python", help="transcribe.cpp's Python")
    ap.add_argument(
        "--their-kv-type",
        default="f32",
        choices=("auto", "f16", "f32"),
        help="transcribe.cpp's KV cache (its default, auto, is F16; ours is F32)",
    )
    ap.add_argument("--json", type=Path, help="write every case's row here")
    args = ap.parse_args(argv)
    models, kinds = args.models.split(","), args.types.split(",")
    delays, feeds = [int(x) for x in args.delays.split(",")], [int(x) for x in args.feeds.split(",")]
    with tempfile.TemporaryDirectory(prefix="agree-tcpp-") as tmp:
        files = make_models(Path(tmp), models, kinds)
        clips = write_clips(Path(tmp))
        rows = []
        print("| model | type | clip | mode | delay | feed ms | ids ours / theirs | first difference | ref |")
        print("|---|---|---|---|---|---|---|---|---|")
        for case in cases(models, kinds, delays, feeds):
            r = run_case(
                case, files[(case.model, case.kind)], clips[case.clip], args.venv_python, args.their_kv_type
            )
            rows.append(r)
            if r["first_diff"] is None:
                where = "same" + (
                    " up to the first EOS, where transcribe.cpp stops" if r["their_eos_stop"] else ""
                )
                if "timing_diff_step" in r:
                    where += f" (emitted after other feeds from feed {r['timing_diff_step']})"
            else:
                where = f"token {r['first_diff']}"
                if case.mode == "stream":
                    where += f" (feed {r['step_ours']} ours / {r['step_theirs']} theirs)"
            ref = ""
            if "ours_eq_ref" in r:
                ref = f"ours {'=' if r['ours_eq_ref'] else '≠'}, theirs {'=' if r['theirs_eq_ref'] else '≠'}"
            feed = str(case.feed_ms) if case.mode == "stream" else "—"
            print(
                f"| {case.model} | {case.kind} | {case.clip} | {case.mode} | {case.delay} | {feed} | "
                f"{r['n_ours']} / {r['n_theirs']} | {where} | {ref} |",
                flush=True,
            )
    same = sum(r["first_diff"] is None for r in rows)
    print(f"\n{same} of {len(rows)} cases emit the same ids")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
