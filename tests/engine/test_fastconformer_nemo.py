"""Parakeet-EOU (FastConformer RNN-T, NeMo layout) against NeMo's own decoding of tiny random models.

Converter + engine must give NeMo's token ids exactly in F32, offline and streamed in any feed size,
with <EOU> as a token and an END_OF_UTTERANCE event that never ends the stream.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from captionist import _engine, engine
from captionist.convert import convert_checkpoint

from .fastconformer_fixtures import FASTCONFORMER, NEMO_MODELS, clip, expected, source

FEEDS = {"1 sample": [1], "10 ms": [160], "999": [999], "1 s": [16000], "20 s": [320000], "random": None}


@pytest.fixture(scope="module")
def nemo_model(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, str], engine.Model]:
    root = tmp_path_factory.mktemp("nemo_gguf")
    cache: dict[tuple[str, str], engine.Model] = {}

    def get(model: str, kind: str = "f32") -> engine.Model:
        if (model, kind) not in cache:
            expected(model)
            f32 = root / f"{model}.f32.gguf"
            if not f32.exists():
                convert_checkpoint(source(model), f32, "f32", progress=False)
            path = f32
            if kind != "f32":
                path = root / f"{model}.{kind}.gguf"
                engine.quantize(f32, path, kind)
            cache[(model, kind)] = engine.Model(path, backend="cpu", n_threads=1)
        return cache[(model, kind)]

    return get


def streamed(m: engine.Model, pcm: np.ndarray, sizes: list[int] | None, seed: int = 0) -> engine.Transcript:
    rng = np.random.default_rng(seed)
    s = m.stream()
    tokens: list[engine.Token] = []
    events: list[tuple[int, engine.StreamEvent]] = []
    pos = 0
    while pos < len(pcm):
        n = sizes[0] if sizes else int(rng.integers(1, 8000))
        u = s.feed(pcm[pos : pos + n])
        pos += n
        events += [(len(tokens) + at, e) for at, e in u.placed_events()]
        tokens += u.new_tokens
    u = s.finish()
    events += [(len(tokens) + at, e) for at, e in u.placed_events()]
    tokens += u.new_tokens
    return engine.Transcript(u.text, [t.id for t in tokens], tokens, events)


@pytest.mark.parametrize("model", NEMO_MODELS)
def test_model_info(nemo_model: Callable[..., engine.Model], model: str) -> None:
    m = nemo_model(model)
    ref = expected(model)
    assert m.architecture == "fastconformer_rnnt" and m.info["variant"] == "parakeet_eou"
    assert m.latencies_ms == ((ref["att_context_size"][1] + 1) * 80,) == (m.default_latency_ms,)
    assert m.languages == () and m.default_language is None
    assert m.punctuation is False and m.info["end_of_utterance"] is True
    assert m.info["eou_id"] == ref["vocab"]["eou_id"] and m.info["blank_id"] == ref["vocab"]["blank_id"]
    assert m.info["n_vocab"] == ref["vocab"]["n_vocab"]


@pytest.mark.parametrize("model", NEMO_MODELS)
def test_offline_matches_nemo(nemo_model: Callable[..., engine.Model], model: str) -> None:
    m = nemo_model(model)
    eou = expected(model)["vocab"]["eou_id"]
    for case in expected(model)["cases"]:
        t = m.transcribe(clip(model, case["clip"]))
        assert t.token_ids == case["token_ids"], case["clip"]
        assert t.text == case["text"], case["clip"]
        assert [tok.time_ms for tok in t.tokens] == [80 * f for f in case["token_frames"]], case["clip"]
        # every <EOU> is a token and an event right after it; decoding went on to the end
        eou_at = [i + 1 for i, tok in enumerate(t.tokens) if tok.id == eou]
        assert [at for at, e in t.events if e == engine.StreamEvent.END_OF_UTTERANCE] == eou_at
        assert len(eou_at) == case["n_eou"]
        assert all(tok.is_control and tok.piece == "" for tok in t.tokens if tok.id == eou)


def test_the_fixtures_exercise_the_rules() -> None:
    """Guards the fixture itself: EOU in the middle of speech, silence quiet, a clip past the context."""
    for model in NEMO_MODELS:
        cases = {c["clip"]: c for c in expected(model)["cases"]}
        assert cases["silence"]["token_ids"] == []
        assert sum(c["n_eou"] for c in cases.values()) >= 3
        assert cases["speech_long"]["n_enc_frames"] > expected(model)["att_context_size"][0]
        assert min(c["min_margin_all_steps"] for c in cases.values() if c["token_ids"]) > 1e-3


@pytest.mark.parametrize("feed", list(FEEDS))
@pytest.mark.parametrize("model", NEMO_MODELS)
def test_streaming_equals_offline_for_any_feed_size(
    nemo_model: Callable[..., engine.Model], model: str, feed: str
) -> None:
    m = nemo_model(model)
    for case in expected(model)["cases"]:
        if feed == "1 sample" and case["clip"] != "speech_short":
            continue  # 48 800 single-sample feeds are enough to prove the point
        if feed not in ("999", "random") and case["clip"] not in ("speech_short", "speech_pause", "silence"):
            continue  # every clip with two feed patterns, the short ones with all
        t = streamed(m, clip(model, case["clip"]), FEEDS[feed])
        assert t.token_ids == case["token_ids"], (case["clip"], feed)
        assert t.text == case["text"], (case["clip"], feed)
        assert t.events[-1] == (len(t.tokens), engine.StreamEvent.FINISHED)
        eou = expected(model)["vocab"]["eou_id"]
        eou_at = [i + 1 for i, tok in enumerate(t.tokens) if tok.id == eou]  # right after each <EOU>
        assert [at for at, e in t.events if e == engine.StreamEvent.END_OF_UTTERANCE] == eou_at


def test_tokens_come_out_while_audio_goes_in(nemo_model: Callable[..., engine.Model]) -> None:
    """Live: each token is out once its chunk's audio (160 ms) is in, not only at finish()."""
    m = nemo_model("parakeet_eou_tiny")
    pcm = clip("parakeet_eou_tiny", "speech_pause")
    s = m.stream()
    late = 0
    for pos in range(0, len(pcm), 160):
        u = s.feed(pcm[pos : pos + 160])
        for tok in u.new_tokens:
            late = max(late, u.audio_ms_received - tok.time_ms)
        assert u.lag_ms <= 160 + 80 + 25  # one chunk, the subsampling's reach, the STFT window
    assert 0 < late <= 160 + 80 + 25
    before_finish = len(s.token_ids)
    s.finish()
    assert before_finish >= len(s.token_ids) - 3


def test_intermediates_match_nemo(nemo_model: Callable[..., engine.Model]) -> None:
    ref = np.load(FASTCONFORMER / "parakeet_eou_tiny" / "intermediates_speech_short.npz")
    s = _engine.Stream(nemo_model("parakeet_eou_tiny")._m, capture=True)
    pcm = clip("parakeet_eou_tiny", "speech_short")
    for pos in range(0, len(pcm), 999):
        s.feed(pcm[pos : pos + 999])
    s.finish()
    cap = s.captured()
    np.testing.assert_allclose(cap["features"], ref["features"], atol=5e-4)
    xscale = np.sqrt(expected("parakeet_eou_tiny")["dims"]["d_model"])  # NeMo's pre_encode output is unscaled
    np.testing.assert_allclose(cap["encoder_input"] / xscale, ref["subsampling_out"], atol=2e-5)
    np.testing.assert_allclose(cap["encoder_out"], ref["encoder_out"], atol=2e-5)
    np.testing.assert_allclose(cap["joint_enc"], ref["joint_enc"], atol=2e-5)
    # logits reach ~9: bounded relative to their scale as in the HF test (another F32 summation order)
    scale = np.abs(ref["first_joint_logits"]).max()
    np.testing.assert_allclose(cap["first_logits"][0], ref["first_joint_logits"], atol=2e-5 * scale)


# bound on max |encoder output error| / max |F32 encoder output|
QUANT_BOUND = {"F16": 0.005, "Q8_0": 0.05, "Q4_K": 0.15}


def captured(m: engine.Model, pcm: np.ndarray) -> dict[str, np.ndarray]:
    s = _engine.Stream(m._m, capture=True)
    s.feed(pcm)
    s.finish()
    return s.captured()


@pytest.mark.parametrize("kind", list(QUANT_BOUND))
def test_quantized_files_load_and_run(nemo_model: Callable[..., engine.Model], kind: str) -> None:
    """Token ids of tiny random models are too close to their decision boundaries to survive
    quantization, so the check is on the encoder and joint inputs, plus F16 ids on one clip."""
    m = nemo_model("parakeet_eou_tiny", kind)
    assert m.info["tensor_types"].get("f32", 0) < sum(m.info["tensor_types"].values())
    pcm = clip("parakeet_eou_tiny", "speech_mid")
    ref, got = captured(nemo_model("parakeet_eou_tiny"), pcm), captured(m, pcm)
    for key in ("encoder_out", "joint_enc"):
        err = np.abs(got[key] - ref[key]).max() / np.abs(ref[key]).max()
        assert err < QUANT_BOUND[kind], (kind, key, err)
    assert m.transcribe(clip("parakeet_eou_tiny", "silence")).token_ids == []
    if kind == "F16":
        short = next(c for c in expected("parakeet_eou_tiny")["cases"] if c["clip"] == "speech_short")
        assert m.transcribe(clip("parakeet_eou_tiny", "speech_short")).token_ids == short["token_ids"]


def test_concurrent_use_of_one_stream_is_refused(nemo_model: Callable[..., engine.Model]) -> None:
    import threading

    s = _engine.Stream(nemo_model("parakeet_eou_tiny")._m)
    pcm = np.zeros(16000 * 20, np.float32)
    errors: list[str] = []

    def hammer() -> None:
        for _ in range(20):
            try:
                s.feed(pcm[:16000])
            except engine.EngineError as exc:
                errors.append(str(exc))

    threads = [threading.Thread(target=hammer) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all("already in use" in e for e in errors)


def test_unsupported_latency_and_language_are_clear(nemo_model: Callable[..., engine.Model]) -> None:
    m = nemo_model("parakeet_eou_tiny")
    with pytest.raises(ValueError, match="160 ms"):
        m.stream(latency_ms=560)
    with pytest.raises(ValueError, match="recognises the language itself"):
        m.stream(language="de")


def test_converted_file_path(tmp_path: Path) -> None:
    """The .nemo converts through the CLI's converter into a file the engine opens."""
    out = tmp_path / "p.gguf"
    convert_checkpoint(source("parakeet_eou_tiny"), out, "f16", progress=False)
    assert engine.Model(out, backend="cpu").info["tensor_types"]["f16"] > 0


def test_memory_is_constant_over_a_long_stream(nemo_model: Callable[..., engine.Model]) -> None:
    """Five minutes of audio: the stream's state stays the same size once its caches are full, and
    decoding keeps up with the audio (deterministic counts; speed is bench/'s business)."""
    s = _engine.Stream(nemo_model("parakeet_eou_tiny_ctx")._m)
    speech = clip("parakeet_eou_tiny_ctx", "speech_pause")
    sizes: list[int] = []
    fed = 0
    while fed < 5 * 60 * 16000:
        for pos in range(0, len(speech), 4000):
            r = s.feed(speech[pos : pos + 4000])
            fed += len(speech[pos : pos + 4000])
            sizes.append(s.state_bytes)
            assert r["audio_ms_received"] - r["audio_ms_decoded"] <= 160 + 80 + 25 + 250
    assert len(set(sizes[50:])) == 1, sorted(set(sizes))
    t = s.timings()
    assert abs(t["n_encoder_frames"] - fed / 1280) <= 2 + 1  # every 80 ms frame but the last chunk
