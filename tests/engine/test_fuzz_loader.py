"""Fuzz the loader and the hyper-parameter bounds: seeded mutations of the tiny fixture files of both
families, in batches, each batch in a child process. Every case must load and stream, or raise
EngineError; an exception of another type, a crash (signal) or a hang fails naming the seed and case."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

CHILD = Path(__file__).resolve().parent / "gguf_fuzz.py"
APP = Path(__file__).resolve().parents[2] / "app"
SEED = 14
BATCH = 500
BATCH_TIMEOUT_S = 300  # a batch takes seconds; only a hang gets near this


def run_batch(path: Path, seed: int, first: int, count: int) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=f"{APP}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    try:
        return subprocess.run(
            [sys.executable, str(CHILD), str(path), str(seed), str(first), str(count)],
            capture_output=True,
            text=True,
            timeout=BATCH_TIMEOUT_S,
            env=env,
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        return subprocess.CompletedProcess(exc.cmd, -9, out, "timed out")


def last_case(stdout: str) -> str:
    started = [line for line in stdout.splitlines() if line.startswith("case ")]
    return started[-1] if started else "(no case started)"


def fuzz(path: Path, n_cases: int, seed: int = SEED) -> dict[str, int]:
    """Runs n_cases in batches; on a failed batch re-runs its last case alone to name it."""
    counts = {"ok": 0, "error": 0}
    for first in range(0, n_cases, BATCH):
        done = run_batch(path, seed, first, min(BATCH, n_cases - first))
        for line in done.stdout.splitlines():
            word = line.split(" ", 1)[0]
            if word in counts:
                counts[word] += 1
        if done.returncode != 0:
            culprit = last_case(done.stdout)
            index = int(culprit.split()[1]) if culprit.startswith("case ") else first
            alone = run_batch(path, seed, index, 1)
            pytest.fail(
                f"{path.name} seed {seed} {culprit} "
                f"(exit {done.returncode}; alone: exit {alone.returncode}): "
                f"{done.stdout.splitlines()[-1] if done.stdout else ''} {done.stderr[-500:]}"
            )
    return counts


DEFAULT_CASES = [("voxtral", 2000), ("parakeet", 2000), ("nemotron35", 1000)]


@pytest.mark.parametrize(("fixture", "n_cases"), DEFAULT_CASES)
def test_mutated_files_load_or_raise_engine_error(
    fixture_ggufs: dict[str, Path], fixture: str, n_cases: int
) -> None:
    counts = fuzz(fixture_ggufs[fixture], n_cases)
    assert counts["ok"] + counts["error"] == n_cases
    assert counts["error"] > n_cases // 4, counts  # the mutations do reach the checks


@pytest.mark.slow
@pytest.mark.parametrize("fixture", ["voxtral", "parakeet", "nemotron35"])
def test_many_more_mutated_files(fixture_ggufs: dict[str, Path], fixture: str) -> None:
    for seed in range(100, 105):
        fuzz(fixture_ggufs[fixture], 5000, seed)
