"""The Voxtral decoder's cache starts small and grows (doubling, before its first wrap) instead of
holding the whole attention window from the start (kv_ring growing). Growing copies the cache and
rebuilds the graphs built on the old one: the stream must compute exactly what a stream with the
whole cache from the start computes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from captionist import _engine, engine

from .conftest import speechy

BLOCK = 16000 * 480 // 1000  # 480 ms feeds
WHOLE_SLOTS = 4096 + 1 + 32 + 30  # tiny_wide's decoder window, and [BOS], left padding, longest delay


def run(
    path: Path, pcm: np.ndarray, first_slots: int, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[int], np.ndarray, list[int]]:
    monkeypatch.setenv("CAPTIONIST_DEC_CACHE_SLOTS", str(first_slots))
    m = engine.Model(path, backend="cpu", n_threads=2)
    s = _engine.Stream(m._m, latency_ms=480, capture=True)
    ids: list[int] = []
    sizes: list[int] = []
    for i in range(0, len(pcm), BLOCK):
        ids += [t[0] for t in s.feed(pcm[i : i + BLOCK])["new_tokens"]]
        sizes.append(s.state_bytes)
    ids += [t[0] for t in s.finish()["new_tokens"]]
    return ids, np.asarray(s.captured()["logits"]), sizes


@pytest.mark.parametrize("kind", ["f32", "f16"])
def test_a_growing_cache_computes_what_the_whole_cache_does(
    monkeypatch: pytest.MonkeyPatch, gguf_path: Callable[[str, str], Path], kind: str
) -> None:
    # tiny_wide: a 4,096-position decoder window; 50 s of audio is ~660 positions, so a cache of 256
    # first slots grows twice (to 512, then 1,024), one step of the kept graphs and one verification
    path = gguf_path("tiny_wide", kind)
    pcm = speechy(50.0)
    grown_ids, grown_logits, grown_sizes = run(path, pcm, 256, monkeypatch)
    whole_ids, whole_logits, whole_sizes = run(path, pcm, 0, monkeypatch)
    assert grown_ids == whole_ids
    np.testing.assert_array_equal(grown_logits, whole_logits)
    # the same graphs and buffers otherwise: the difference is the cache's slots, 1,024 against the
    # window and the longest prompt
    assert whole_sizes[-1] - grown_sizes[-1] == (WHOLE_SLOTS - 1024) * slot_bytes(path, kind)
    assert grown_sizes == sorted(grown_sizes)


def slot_bytes(path: Path, kind: str) -> int:
    info = engine.Model(path, backend="cpu").info["decoder"]
    return 2 * (4 if kind == "f32" else 2) * info["n_layer"] * info["n_head_kv"] * info["head_dim"]


def test_a_new_stream_holds_only_its_first_slots(
    monkeypatch: pytest.MonkeyPatch, gguf_path: Callable[[str, str], Path]
) -> None:
    path = gguf_path("tiny_wide", "f16")
    monkeypatch.delenv("CAPTIONIST_DEC_CACHE_SLOTS", raising=False)
    m = engine.Model(path, backend="cpu")
    small = _engine.Stream(m._m, latency_ms=480).state_bytes
    monkeypatch.setenv("CAPTIONIST_DEC_CACHE_SLOTS", "0")
    whole = _engine.Stream(m._m, latency_ms=480).state_bytes
    # 512 first slots of the window and the longest prompt
    assert whole - small == (WHOLE_SLOTS - 512) * slot_bytes(path, "f16")
