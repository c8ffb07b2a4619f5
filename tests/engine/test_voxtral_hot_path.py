"""The Voxtral decoder's hot path: its one-position step graph is built once per attention width
and recomputed with re-pointed cache writes, the ada scales and audio embeddings stay on the
device, and only the token id comes back. Kept graphs must compute exactly what fresh ones do."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from captionist import _engine, engine

from .conftest import MODELS, load_clip, speechy

SR = 16000
TOKEN = SR * 80 // 1000


@pytest.mark.parametrize("model", MODELS)
def test_decoder_steps_build_no_graphs_and_return_only_token_ids(
    gguf_path: Callable[[str, str], Path], model: str
) -> None:
    m = engine.Model(gguf_path(model, "f32"), backend="cpu", n_threads=1)
    enc_embd = m.info["encoder"]["n_embd"]
    s = m.stream(latency_ms=480)
    pcm = speechy(24.0)
    warm = 4 * SR
    for i in range(0, warm, TOKEN):
        s.feed(pcm[i : i + TOKEN])
    a = s.timings()
    for i in range(warm, len(pcm), TOKEN):
        s.feed(pcm[i : i + TOKEN])
    b = s.timings()
    d = {k: b[k] - a[k] for k in a}
    assert d["n_decoder_calls"] >= 200 and d["n_audio_batches"] >= 200
    # graphs are rebuilt only when a cache view widens (by 256 slots, until the ring is full):
    # tiny_small's rings are full after the warm-up; tiny_wide's decoder view widens once, its
    # encoder view (2048-frame window, 4 frames per batch) at most four times
    assert d["n_graph_builds"] <= (0 if model == "tiny_small" else 5), d
    assert d["n_buffer_grows"] <= d["n_graph_builds"], d
    # out: a token id per step, the conv stem's last frame per encoder batch; nothing else
    assert d["n_bytes_out"] == 4 * d["n_decoder_calls"] + 4 * enc_embd * d["n_audio_batches"], d


@pytest.mark.parametrize("model", MODELS)
def test_kept_step_graphs_compute_what_fresh_ones_do(
    gguf_path: Callable[[str, str], Path], monkeypatch: pytest.MonkeyPatch, model: str
) -> None:
    path = gguf_path(model, "f32")
    pcm = np.concatenate([load_clip("speech_long.wav"), speechy(30.0, seed=5), load_clip("speech_mid.wav")])
    sizes = np.random.default_rng(11).integers(1, 4000, size=2000)

    def run() -> tuple[list[int], np.ndarray]:
        m = engine.Model(path, backend="cpu", n_threads=2)
        s = _engine.Stream(m._m, latency_ms=240, capture=True)
        ids: list[int] = []
        start = 0
        for n in sizes:
            if start >= len(pcm):
                break
            ids += [t[0] for t in s.feed(pcm[start : start + int(n)])["new_tokens"]]
            start += int(n)
        ids += [t[0] for t in s.finish()["new_tokens"]]
        return ids, np.asarray(s.captured()["logits"])

    kept = run()
    monkeypatch.setenv("CAPTIONIST_NO_GRAPH_REUSE", "1")
    fresh = run()
    assert len(kept[0]) > 300
    assert kept[0] == fresh[0]
    np.testing.assert_array_equal(kept[1], fresh[1])  # bit for bit


def test_flash_attention_on_the_cpu_matches_the_reference(
    gguf_path: Callable[[str, str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """CAPTIONIST_FLASH_ATTN=1 puts the CPU on the fused kernel GPUs use (F32 caches here): the
    reference's tokens must still come out (the golden cases all do on this machine)."""
    from .conftest import load_expected

    monkeypatch.setenv("CAPTIONIST_FLASH_ATTN", "1")
    for model in MODELS:
        m = engine.Model(gguf_path(model, "f32"), backend="cpu", n_threads=2)
        assert m.info["flash_attention"] is True and m.info["kv_cache_type"] == "f32"
        cases = load_expected(model)["cases"]
        for case in cases[:: max(1, len(cases) // 8)]:
            t = m.transcribe(
                load_clip(case["clip"]), delay_ms=case["delay_tokens"] * 80, stop_at_end_of_utterance=True
            )
            assert t.token_ids == case["token_ids"], (model, case["clip"], case["delay_tokens"])
    monkeypatch.delenv("CAPTIONIST_FLASH_ATTN")
    m = engine.Model(gguf_path(MODELS[0], "f32"), backend="cpu")
    assert m.info["flash_attention"] is False  # the CPU's default: the mul_mat path


def test_attention_settings_are_validated(
    gguf_path: Callable[[str, str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CAPTIONIST_KV_TYPE", "f16")
    assert engine.Model(gguf_path(MODELS[0], "f32"), backend="cpu").info["kv_cache_type"] == "f16"
    monkeypatch.setenv("CAPTIONIST_KV_TYPE", "q3")
    with pytest.raises(ValueError, match="CAPTIONIST_KV_TYPE"):
        engine.Model(gguf_path(MODELS[0], "f32"), backend="cpu")


@pytest.mark.parametrize("model", MODELS)
def test_speculative_decoding_takes_drafts_and_changes_nothing(
    gguf_path: Callable[[str, str], Path], monkeypatch: pytest.MonkeyPatch, model: str
) -> None:
    """With all the audio there, guessed positions are verified in batches: the outputs are those
    of plain steps (here token for token on every golden clip and delay), fewer decoder calls run,
    and a draft that missed leaves the cache as plain steps would (the clips' later tokens say so)."""
    from .conftest import load_expected

    path = gguf_path(model, "f32")

    def run(pcm: np.ndarray, delay_ms: int) -> tuple[list[int], dict[str, float]]:
        m = engine.Model(path, backend="cpu", n_threads=2)
        s = _engine.Stream(m._m, latency_ms=delay_ms)
        ids = [t[0] for r in (s.feed(pcm), s.finish()) for t in r["new_tokens"]]
        return ids, dict(s.timings())

    accepted = drafted = 0
    cases = load_expected(model)["cases"]
    for case in cases:
        pcm = load_clip(case["clip"])
        spec, t_spec = run(pcm, case["delay_tokens"] * 80)
        monkeypatch.setenv("CAPTIONIST_NO_SPECULATION", "1")
        plain, t_plain = run(pcm, case["delay_tokens"] * 80)
        monkeypatch.delenv("CAPTIONIST_NO_SPECULATION")
        assert spec == plain, (case["clip"], case["delay_tokens"])
        assert t_plain["n_draft_positions"] == 0
        assert t_spec["n_decoder_calls"] <= t_plain["n_decoder_calls"]
        accepted += int(t_spec["n_draft_accepted"])
        drafted += int(t_spec["n_draft_positions"])
    assert 0 < accepted < drafted, (accepted, drafted)  # both outcomes were exercised
