"""A FastConformer stream builds its steady-state graphs once: a whole chunk against a full cache is
recomputed with new inputs, the joint likewise, so a running session neither builds graphs nor
grows compute buffers. Kept graphs must decode exactly what freshly built ones do."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from captionist import engine

from .conftest import speechy

SR = 16000
MODELS = ("nemotron_tiny_ctx", "parakeet_eou_tiny_ctx")


@pytest.mark.parametrize("model", MODELS)
def test_a_running_stream_builds_no_graphs_and_grows_no_buffers(
    fc_f32: Callable[[str], Path], model: str
) -> None:
    m = engine.Model(fc_f32(model), backend="cpu", n_threads=1)
    for latency in m.info["latencies_ms"]:
        s = m.stream(latency_ms=latency)
        piece = latency * SR // 1000  # one chunk of audio per feed: one steady batch each
        pcm = speechy(40.0)
        warm = 8 * SR
        for i in range(0, warm, piece):
            s.feed(pcm[i : i + piece])
        before = s.timings()
        for i in range(warm, len(pcm) - piece, piece):
            s.feed(pcm[i : i + piece])
        after = s.timings()
        assert after["n_encoder_batches"] - before["n_encoder_batches"] >= 25, latency
        assert after["n_graph_builds"] == before["n_graph_builds"], latency
        assert after["n_buffer_grows"] == before["n_buffer_grows"], latency
        assert after["n_graph_computes"] > before["n_graph_computes"], latency
        # on the CPU alone every graph is one split: the counter the GPU check reads (a split more
        # per graph there is an op that fell back to the CPU)
        computes = after["n_graph_computes"] - before["n_graph_computes"]
        assert after["n_graph_splits"] - before["n_graph_splits"] == computes, latency


@pytest.mark.parametrize("model", MODELS)
def test_kept_graphs_decode_what_fresh_graphs_decode(
    fc_f32: Callable[[str], Path], monkeypatch: pytest.MonkeyPatch, model: str
) -> None:
    path = fc_f32(model)
    pcm = speechy(25.0, seed=3)
    sizes = np.random.default_rng(7).integers(1, 9000, size=400)

    def run(latency: int) -> tuple[list[int], list[int]]:
        s = engine.Model(path, backend="cpu", n_threads=2).stream(latency_ms=latency)
        ids: list[int] = []
        times: list[int] = []
        start = 0
        for n in sizes:
            if start >= len(pcm):
                break
            r = s.feed(pcm[start : start + int(n)])
            start += int(n)
            ids += [t.id for t in r.new_tokens]
            times += [t.time_ms for t in r.new_tokens]
        r = s.finish()
        return ids + [t.id for t in r.new_tokens], times + [t.time_ms for t in r.new_tokens]

    for latency in engine.Model(path, backend="cpu").info["latencies_ms"]:
        kept = run(latency)
        monkeypatch.setenv("CAPTIONIST_NO_GRAPH_REUSE", "1")
        fresh = run(latency)
        monkeypatch.delenv("CAPTIONIST_NO_GRAPH_REUSE")
        assert len(kept[0]) > 20, latency
        assert kept == fresh, latency
