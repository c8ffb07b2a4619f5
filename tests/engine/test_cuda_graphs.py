"""ggml's CUDA graphs and the engine's kept graphs do not mix, so the engine turns them off.

A ggml built with GGML_CUDA_GRAPHS captures a graph's kernels and replays them whenever the scheduler
hands over a split it has not made again, without looking at the nodes' addresses (ggml-cuda.cu,
ggml_cuda_graph_update_required). A stream recomputes its kept graphs after moving their cache-write
views (graph_runner.h, move_view), which such a replay would not see. These tests show, on the CPU,
that the kept graphs of both families do move between computes (``n_moved_recomputes``), and that
the engine therefore sets ``GGML_CUDA_DISABLE_GRAPHS`` for its process before any backend computes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from captionist import engine

from .conftest import speechy

SR = 16000

PROBE = """
import ctypes, sys
from captionist import engine
libc = ctypes.CDLL(None)
libc.getenv.restype = ctypes.c_char_p
before = libc.getenv(b"GGML_CUDA_DISABLE_GRAPHS")
engine.compute_devices()
after = libc.getenv(b"GGML_CUDA_DISABLE_GRAPHS")
print(repr(before), repr(after))
"""


def probe(**env: str) -> tuple[str, str]:
    """GGML_CUDA_DISABLE_GRAPHS in a fresh process before and after the engine loaded its backends."""
    base = {
        k: v for k, v in os.environ.items() if k not in ("GGML_CUDA_DISABLE_GRAPHS", "CAPTIONIST_CUDA_GRAPHS")
    }
    out = subprocess.run(
        [sys.executable, "-c", PROBE],
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout.split()
    return out[0], out[1]


@pytest.mark.skipif(sys.platform == "win32", reason="reads the C library's environment through ctypes")
def test_the_engine_turns_cuda_graphs_off_before_any_backend_computes() -> None:
    assert probe() == ("None", "b'1'")
    # the development switch (tools/gpu_check.sh measures the graphs with it) leaves them on
    assert probe(CAPTIONIST_CUDA_GRAPHS="1") == ("None", "None")
    assert probe(CAPTIONIST_CUDA_GRAPHS="0") == ("None", "b'1'")
    # a value the user set is kept (ggml turns the graphs off for any value)
    assert probe(GGML_CUDA_DISABLE_GRAPHS="yes") == ("b'yes'", "b'yes'")


def stream_counters(path: Path, latency_ms: int, seconds: float, piece: int) -> dict[str, float]:
    s = engine.Model(path, backend="cpu", n_threads=1).stream(latency_ms=latency_ms)
    pcm = speechy(seconds)
    for i in range(0, len(pcm), piece):
        s.feed(pcm[i : i + piece])
    s.finish()
    return s.timings()


@pytest.mark.parametrize("reuse", [True, False])
def test_kept_graphs_move_their_views_between_computes(
    gguf_path: Callable[[str, str], Path],
    fc_f32: Callable[[str], Path],
    monkeypatch: pytest.MonkeyPatch,
    reuse: bool,
) -> None:
    if not reuse:
        monkeypatch.setenv("CAPTIONIST_NO_GRAPH_REUSE", "1")
    runs = {
        "voxtral": stream_counters(gguf_path("tiny_small", "f32"), 480, 6.0, SR * 80 // 1000),
        "fastconformer": stream_counters(fc_f32("nemotron_tiny_ctx"), 160, 8.0, SR * 160 // 1000),
    }
    for family, t in runs.items():
        recomputes = t["n_graph_computes"] - t["n_graph_builds"]  # computes of a graph built earlier
        assert t["n_moved_recomputes"] <= recomputes, (family, t)
        if reuse:
            # the steady encoder (and Voxtral's decoder) steps recompute a kept graph whose cache
            # writes now point at the next slots; FastConformer's joint, recomputed with new inputs
            # only, stays where it was
            assert t["n_moved_recomputes"] > 20, (family, t)
        else:
            # every graph is built for its compute: nothing is ever recomputed, so nothing moved
            assert t["n_moved_recomputes"] == 0, (family, t)
