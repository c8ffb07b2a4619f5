"""Large encoder batches on the CPU with F16 caches read their attention with ggml's tiled flash
attention from a row copy of the values (attention_choice::batch_flash, kv_ring::add_row_copy);
single steps keep the products. The two readings must agree to float rounding, whenever the row
copy was added, and F32 models (the golden-exact path) must never use it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from captionist import _engine, engine

from .conftest import load_clip

BLOCK = 1280  # 80 ms at 16 kHz: one audio token per feed, a 4-frame encoder batch


def run(
    path: Path, feeds: list[np.ndarray], monkeypatch: pytest.MonkeyPatch, flash: bool, capture: bool = True
) -> tuple[dict[str, np.ndarray], dict[str, float], list[int]]:
    if flash:
        monkeypatch.delenv("CAPTIONIST_FLASH_ATTN", raising=False)
    else:
        monkeypatch.setenv("CAPTIONIST_FLASH_ATTN", "0")  # the products everywhere
    m = engine.Model(path, backend="cpu", n_threads=2)
    assert m.info["batch_flash_attention"] is flash
    s = _engine.Stream(m._m, latency_ms=480, capture=capture)
    results = [s.feed(f) for f in feeds] + [s.finish()]
    ids = [t[0] for r in results for t in r["new_tokens"]]
    cap = {k: np.asarray(v) for k, v in s.captured().items()} if capture else {}
    return cap, dict(s.timings()), ids


def rel_rms(a: np.ndarray, b: np.ndarray) -> float:
    return float(
        np.sqrt(np.mean(np.square(a - b, dtype=np.float64)) / np.mean(np.square(b, dtype=np.float64)))
    )


def check_close(
    path: Path, exact_path: Path, feeds: list[np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> dict[str, float]:
    """The flash batches must be as close to the F32 model (the same feeds) as the products are.
    They are not the products' bits: those round the queries to F16 and sum in another order."""
    exact, _, _ = run(exact_path, feeds, monkeypatch, flash=False)
    flash, t_flash, _ = run(path, feeds, monkeypatch, flash=True)
    plain, t_plain, _ = run(path, feeds, monkeypatch, flash=False)
    assert t_plain["n_flash_audio_batches"] == 0
    assert t_flash["n_flash_audio_batches"] > 0
    for key in ("enc_out", "embeds"):
        assert flash[key].shape == plain[key].shape == exact[key].shape
        plain_error = rel_rms(plain[key], exact[key])
        assert 0 < plain_error < 0.5
        assert rel_rms(flash[key], exact[key]) <= 1.02 * plain_error, key
    return t_flash


def test_an_offline_clip_reads_its_batches_with_flash_attention(
    monkeypatch: pytest.MonkeyPatch, gguf_path: Callable[[str, str], Path]
) -> None:
    exact = gguf_path("tiny_wide", "f32")
    t = check_close(gguf_path("tiny_wide", "f16"), exact, [load_clip("speech_mid.wav")], monkeypatch)
    # never the silent start's own batch (124 frames), nor one the decoder's pace cuts short
    assert 0 < t["n_flash_audio_batches"] < t["n_audio_batches"]


def test_a_stream_that_catches_up_copies_what_its_cache_already_holds(
    monkeypatch: pytest.MonkeyPatch, gguf_path: Callable[[str, str], Path]
) -> None:
    """Two seconds in 80 ms feeds (the products, no row copy yet), then the rest at once: the row
    copy is added mid-stream and must hold the values already cached, or the first flash batch
    reads zeros where the last 2 s should be."""
    pcm = load_clip("speech_mid.wav")
    head = [pcm[i : i + BLOCK] for i in range(0, 2 * 16000, BLOCK)]
    feeds = [*head, pcm[2 * 16000 :]]
    check_close(gguf_path("tiny_wide", "Q4_K"), gguf_path("tiny_wide", "f32"), feeds, monkeypatch)


def test_a_reset_stream_restores_the_silent_start_into_the_row_copy_too(
    monkeypatch: pytest.MonkeyPatch, gguf_path: Callable[[str, str], Path]
) -> None:
    """After a reset the stream already has its row copy when it copies the model's silent start
    back: the start must reach both, as a fresh stream (which copies the start, then fills its row
    copy from it) has it."""
    path = gguf_path("tiny_wide", "f16")
    pcm = load_clip("speech_mid.wav")
    m = engine.Model(path, backend="cpu", n_threads=2)
    first = _engine.Stream(m._m, latency_ms=480)  # saves the silent start
    first.feed(pcm)
    first.finish()

    def ids(r: list[dict]) -> list[int]:
        return [t[0] for x in r for t in x["new_tokens"]]

    fresh = _engine.Stream(m._m, latency_ms=480)
    expected = ids([fresh.feed(pcm), fresh.finish()])
    assert fresh.timings()["n_silence_tokens_restored"] > 0 and fresh.timings()["n_flash_audio_batches"] > 0
    first.reset(latency_ms=480)
    got = ids([first.feed(pcm), first.finish()])
    assert first.timings()["n_silence_tokens_restored"] > 0 and first.timings()["n_flash_audio_batches"] > 0
    assert got == expected


def test_single_steps_and_f32_models_keep_the_products(
    monkeypatch: pytest.MonkeyPatch, gguf_path: Callable[[str, str], Path]
) -> None:
    monkeypatch.delenv("CAPTIONIST_FLASH_ATTN", raising=False)
    m = engine.Model(gguf_path("tiny_wide", "f16"), backend="cpu", n_threads=2)
    s = _engine.Stream(m._m, latency_ms=480)
    pcm = load_clip("speech_short.wav")
    for i in range(0, len(pcm), BLOCK):
        s.feed(pcm[i : i + BLOCK])
    assert s.timings()["n_audio_batches"] > 30
    assert s.timings()["n_flash_audio_batches"] == 0
    s.finish()  # the right padding's tokens arrive at once: a batch large enough
    assert s.timings()["n_flash_audio_batches"] == 1
    m = engine.Model(gguf_path("tiny_wide", "f32"), backend="cpu")
    assert m.info["batch_flash_attention"] is False and m.info["kv_cache_type"] == "f32"
