"""Intermediate tensors (mel, encoder output, audio embeddings, first-step logits) vs the reference."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from captionist import _engine, engine

from .conftest import MODELS, REFERENCE, load_clip


def captured(m: engine.Model, pcm: np.ndarray, delay_tokens: int) -> dict:
    s = _engine.Stream(m._m, latency_ms=delay_tokens * 80, stop_at_end_of_utterance=True, capture=True)
    s.feed(pcm)
    s.finish()
    return s.captured()


@pytest.mark.parametrize("model", MODELS)
def test_f32_intermediates(loaded: Callable[..., engine.Model], model: str) -> None:
    ref = np.load(REFERENCE / model / "intermediates_speech_short_d6.npz")
    cap = captured(loaded(model), load_clip("speech_short.wav"), 6)
    assert cap["mel"].T.shape == ref["mel"].shape
    np.testing.assert_allclose(cap["mel"].T, ref["mel"], atol=1e-4)
    assert cap["enc_out"].shape == ref["enc_out"].shape
    np.testing.assert_allclose(cap["enc_out"], ref["enc_out"], atol=1e-4)
    np.testing.assert_allclose(cap["embeds"], ref["audio_embeds"], atol=1e-4)
    np.testing.assert_allclose(cap["logits"][0], ref["logits0"], atol=1e-4)


@pytest.mark.parametrize("model", MODELS)
def test_streamed_embeddings_equal_offline_reference(loaded: Callable[..., engine.Model], model: str) -> None:
    """Fed in odd-sized pieces, the encoder (KV ring, conv caches, streaming mel) gives the same."""
    ref = np.load(REFERENCE / model / "intermediates_speech_short_d6.npz")
    pcm = load_clip("speech_short.wav")
    s = _engine.Stream(loaded(model)._m, latency_ms=480, stop_at_end_of_utterance=True, capture=True)
    for start in range(0, len(pcm), 999):
        s.feed(pcm[start : start + 999])
    s.finish()
    cap = s.captured()
    np.testing.assert_allclose(cap["mel"].T, ref["mel"], atol=1e-4)
    np.testing.assert_allclose(cap["embeds"], ref["audio_embeds"], atol=1e-4)
