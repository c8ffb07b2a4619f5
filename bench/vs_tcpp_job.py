"""One measured run of one engine in its own process: the job both engines' children execute.

The bench against transcribe.cpp (bench_vs_transcribe_cpp.py) and its agreement check
(agree_vs_transcribe_cpp.py) start every run as a fresh child process: ours under this Python
(vs_tcpp_ours.py; see ``ours_env``), transcribe.cpp under its own virtual environment
(vs_tcpp_theirs.py). Both children get the same ``Job`` (JSON on argv), do the same steps and print
one ``Result`` as the last line of stdout:

1. load the model (timed: ``load_s``);
2. warm up: a throw-away stream over the first ``warmup_s`` of the clip, fed and finished as the
   timed run will be (``mode="stream"``), or one offline run on that much audio (``"offline"``);
3. read the 1-minute load average, then time the run: every feed plus the finish (stream) or the
   one offline call (``wall_s``, with the process CPU time beside it);
4. report peak RSS (``ru_maxrss``: weights are memory-mapped by both engines, so the pages of the
   weights they touched count) and, at the end of the run, its anonymous / file-backed split (the
   engine's own buffers vs the mapped weights), the ggml CPU variant library this process loaded (from
   /proc/self/maps) and the emitted normal-token ids (the transcribe.cpp files are written with
   ``--id-vocab``, so its text spells ids; ours reports ids directly).

Only the standard library and numpy here: transcribe.cpp's environment imports this file too.
"""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

SAMPLE_RATE = 16000
TOKEN_MS = 80
_ID = re.compile(r"\[(\d+)\]")


def ours_env(root: Path) -> dict[str, str]:
    """Environment for our child: ``PYTHONPATH=app`` when the source tree holds a compiled engine
    (an in-place build), else nothing, so the installed package (``pip install .``) is the one run.
    The source tree alone cannot import the engine, and shadowing the installed package with it
    fails every run."""
    app = root / "app"
    if not any((app / "captionist").glob("_engine*")):
        return {}
    return {"PYTHONPATH": str(app) + os.pathsep + os.environ.get("PYTHONPATH", "")}


@dataclass(frozen=True)
class Job:
    model: str  # the GGUF this engine reads
    audio: str  # .npy of float32 16 kHz mono samples
    mode: str  # "stream" or "offline"
    threads: int
    delay_tokens: int  # stream: the delay; offline: 30 (transcribe.cpp's run() is fixed there)
    feed_ms: int = 80  # stream: block size, the same for both engines
    warmup_s: float = 1.0
    record_steps: bool = False  # stream: ids after every feed (for the agreement check; costs time)
    their_min_decode_ms: int = 0  # transcribe.cpp's stream decodes at most every N ms of audio
    their_kv_type: str = "auto"  # transcribe.cpp's KV cache: "auto" (F16), "f16" or "f32"
    stop_at_eos: bool = False  # ours, offline: end at the first EOS (the reference's offline rule)
    repack_cache: str = ""  # ours: Model(repack_cache=...) folder ("" = none)


@dataclass
class Result:
    engine: str
    load_s: float
    warmup_s: float
    wall_s: float
    cpu_s: float
    maxrss_mb: float
    load1_before: float
    cpu_variant: str
    ids: list[int]
    n_feeds: int = 0
    steps: list[int] = field(default_factory=list)  # ids emitted so far, after each feed
    # ours: how many of ``ids`` came before the first end of utterance (EOS), as [low, high] (equal:
    # the engine places the event among the tokens); None without one. transcribe.cpp stops there.
    eos_after: list[int] | None = None
    rss_anon_mb: float = 0.0  # at the end of the timed run: the engine's own memory (KV caches, buffers)
    rss_file_mb: float = 0.0  # ... and the mapped file pages (weights) resident then
    notes: list[str] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)  # ours: Model.info entries about the load


def ids_from_text(text: str) -> list[int]:
    """The ids an ``--id-vocab`` transcript spells (``[12][345]...``)."""
    return [int(m) for m in _ID.findall(text)]


def loaded_cpu_variant() -> str:
    """The ggml CPU backend library mapped into this process ("zen4", "haswell", ...; "linked" for a
    build without variant modules)."""
    with open("/proc/self/maps") as maps:
        libs = {line.split()[-1] for line in maps if "libggml-cpu" in line}
    names = sorted({m.group(1) for lib in libs if (m := re.search(r"libggml-cpu-([\w]+)\.so", lib))})
    return ",".join(names) if names else "linked"


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


def rss_split_mb() -> tuple[float, float]:
    """(anonymous, file-backed) resident memory of this process now, from /proc/self/status."""
    fields = {}
    with open("/proc/self/status") as status:
        for line in status:
            key, _, value = line.partition(":")
            if key in ("RssAnon", "RssFile"):
                fields[key] = float(value.split()[0]) / 1024.0
    return fields.get("RssAnon", 0.0), fields.get("RssFile", 0.0)


def load_audio(job: Job) -> tuple[np.ndarray, np.ndarray]:
    """(warm-up audio, timed audio)."""
    pcm = np.load(job.audio).astype(np.float32, copy=False)
    warm = pcm[: max(int(job.warmup_s * SAMPLE_RATE), TOKEN_MS * SAMPLE_RATE // 1000)]
    return np.ascontiguousarray(warm), np.ascontiguousarray(pcm)


def blocks(pcm: np.ndarray, feed_ms: int) -> list[np.ndarray]:
    step = SAMPLE_RATE * feed_ms // 1000
    return [pcm[a : a + step] for a in range(0, pcm.size, step)]


def job_from_argv(argv: list[str]) -> Job:
    return Job(**json.loads(argv[1]))


def emit(result: Result) -> None:
    print(json.dumps(asdict(result)), flush=True)


def run_job(
    job: Job, engine: str, load: Callable[[], Any], run: Callable[[Any, np.ndarray, bool], dict[str, Any]]
) -> None:
    """The run protocol both children follow, and its Result emitted: ``load()`` (timed) gives the
    loaded engine, ``run(engine, pcm, timed)`` runs once on the warm-up audio (timed as warm-up) and
    once on the clip (timed: wall and CPU time, then memory and the CPU module measured here) and
    returns Result's remaining fields (ids, n_feeds, steps, ...)."""
    warm, pcm = load_audio(job)
    t0 = time.perf_counter()
    loaded = load()
    load_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    run(loaded, warm, False)
    warmup_s = time.perf_counter() - t0
    load1 = os.getloadavg()[0]
    t0, c0 = time.perf_counter(), time.process_time()
    fields = run(loaded, pcm, True)
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    anon, mapped = rss_split_mb()
    emit(
        Result(
            engine=engine,
            load_s=load_s,
            warmup_s=warmup_s,
            wall_s=wall,
            cpu_s=cpu,
            maxrss_mb=peak_rss_mb(),
            rss_anon_mb=anon,
            rss_file_mb=mapped,
            load1_before=load1,
            cpu_variant=loaded_cpu_variant(),
            **fields,
        )
    )


def run_child(python: str, script: Path, job: Job, env: dict[str, str], timeout_s: float) -> dict[str, Any]:
    """Start ``script`` under ``python`` with ``job``; its Result as a dict, plus its stderr tail.
    Raises RuntimeError with the child's output when it fails."""
    proc = subprocess.run(
        [python, str(script), json.dumps(asdict(job))],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        tail = (proc.stdout + proc.stderr)[-3000:]
        raise RuntimeError(f"{script.name} failed (exit {proc.returncode}) on {job.model}:\n{tail}")
    out: dict[str, Any] = json.loads(lines[-1])
    out["stderr_tail"] = proc.stderr[-2000:]
    return out


if __name__ == "__main__":  # pragma: no cover - a library module
    sys.exit("vs_tcpp_job.py is imported by the bench's children; run bench_vs_transcribe_cpp.py")
