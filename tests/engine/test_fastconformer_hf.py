"""Nemotron Speech Streaming / Nemotron 3.5 ASR (FastConformer RNN-T, Hugging Face layout) against
transformers' own greedy decoding of tiny random models, every lookahead and language case.

The reference's offline decoding applies the chunked-limited attention mask of its lookahead, so
each latency has its own offline result; our stream must reproduce it for any feed size.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from captionist import _engine, engine
from captionist.convert import convert_checkpoint

from .fastconformer_fixtures import FASTCONFORMER, HF_MODELS, clip, expected, source

FRAME_MS = 80


@pytest.fixture(scope="module")
def hf_model(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], engine.Model]:
    root = tmp_path_factory.mktemp("hf_gguf")
    cache: dict[str, engine.Model] = {}

    def get(model: str) -> engine.Model:
        if model not in cache:
            expected(model)
            path = root / f"{model}.gguf"
            convert_checkpoint(source(model), path, "f32", progress=False)
            cache[model] = engine.Model(path, backend="cpu", n_threads=1)
        return cache[model]

    return get


def latency(case: dict) -> int:
    return (case["lookahead"] + 1) * FRAME_MS


@pytest.mark.parametrize("model", HF_MODELS)
def test_model_info(hf_model: Callable[[str], engine.Model], model: str) -> None:
    m = hf_model(model)
    ref = expected(model)
    assert m.architecture == "fastconformer_rnnt"
    assert m.latencies_ms == (80, 160, 560, 1120) and m.default_latency_ms == 1120
    assert m.punctuation is True
    assert m.info["blank_id"] == ref["blank_id"]
    if ref["family"] == "nemotron3_5":
        assert m.info["variant"] == "nemotron3_5_asr"
        assert {"auto", "en-US", "de-DE"} <= set(m.languages) and m.default_language == "auto"
    else:
        assert m.info["variant"] == "nemotron_asr_streaming" and m.languages == ()


@pytest.mark.parametrize("model", HF_MODELS)
def test_offline_matches_transformers(hf_model: Callable[[str], engine.Model], model: str) -> None:
    m = hf_model(model)
    for case in expected(model)["cases"]:
        t = m.transcribe(clip(model, case["clip"]), latency_ms=latency(case), language=case.get("language"))
        where = (case["clip"], case["lookahead"], case.get("language"))
        assert t.token_ids == case["token_ids"], where
        assert [tok.time_ms for tok in t.tokens] == [FRAME_MS * f for f in case["frames"]], where
        # text_utf8 is the reference tokenizer's decoding with its ByteFallback step (a run of byte
        # pieces is UTF-8 if valid, else one U+FFFD per byte); the 3.5 fixture's processor.decode
        # leaves those pieces as literal "<0xNN>" (its `text`). Without byte pieces both agree.
        assert t.text == case["text_utf8"], where
        if "<0x" not in case["text"]:
            assert t.text == case["text"], where


@pytest.mark.parametrize("model", HF_MODELS)
def test_reference_streaming_cases(hf_model: Callable[[str], engine.Model], model: str) -> None:
    """transformers' own cache-aware streaming on whole-chunk audio (the fixture records that it
    equals the reference's offline result there); ours, streamed in 10 ms feeds, gives the same."""
    m = hf_model(model)
    for case in expected(model)["stream_cases"]:
        pcm = clip(model, case["clip"])[: case["trimmed_samples"]]
        s = m.stream(latency_ms=latency(case), language=case.get("language"))
        ids: list[int] = []
        for pos in range(0, len(pcm), 160):
            ids += [tok.id for tok in s.feed(pcm[pos : pos + 160]).new_tokens]
        ids += [tok.id for tok in s.finish().new_tokens]
        assert ids == case["token_ids"], (case["clip"], case["lookahead"], case.get("language"))


@pytest.mark.parametrize("feed", [[1], [999], [16000], None])
def test_streaming_equals_offline_for_any_feed_size(hf_model: Callable[[str], engine.Model], feed) -> None:
    model = "nemotron_tiny"
    m = hf_model(model)
    rng = np.random.default_rng(1)
    for case in expected(model)["cases"]:
        if case["clip"] not in ("speech_short", "speech_long"):
            continue
        if feed == [1] and (case["clip"] != "speech_short" or case["lookahead"] not in (13, 0)):
            continue  # single samples: one clip, two lookaheads
        pcm = clip(model, case["clip"])
        s = m.stream(latency_ms=latency(case))
        ids: list[int] = []
        pos = 0
        while pos < len(pcm):
            n = feed[0] if feed else int(rng.integers(1, 20000))
            ids += [tok.id for tok in s.feed(pcm[pos : pos + n]).new_tokens]
            pos += n
        ids += [tok.id for tok in s.finish().new_tokens]
        assert ids == case["token_ids"], (case["clip"], case["lookahead"], feed)


@pytest.mark.parametrize("lookahead", [13, 0])
def test_intermediates_match_transformers(hf_model: Callable[[str], engine.Model], lookahead: int) -> None:
    if not list(FASTCONFORMER.glob(f"*/intermediates_speech_short_r{lookahead}.npz")):
        pytest.skip("the transformers intermediates are not committed")
    for model in HF_MODELS:
        path = FASTCONFORMER / model / f"intermediates_speech_short_r{lookahead}.npz"
        if not path.exists():
            continue
        ref = np.load(path)
        m = hf_model(model)
        s = _engine.Stream(m._m, latency_ms=(lookahead + 1) * FRAME_MS, capture=True)
        pcm = clip(model, "speech_short")
        for pos in range(0, len(pcm), 999):
            s.feed(pcm[pos : pos + 999])
        s.finish()
        cap = s.captured()
        valid = int(ref["encoder_valid_frames"])
        np.testing.assert_allclose(cap["features"], ref["features"], atol=5e-4)
        # the fixture's `subsampling_linear` was grabbed after the encoder's in-place input scaling
        np.testing.assert_allclose(cap["encoder_input"], ref["subsampling_linear"][:valid], atol=5e-5)
        np.testing.assert_allclose(cap["encoder_out"], ref["encoder_out"][:valid], atol=5e-5)
        np.testing.assert_allclose(cap["joint_enc"], ref["pooler_out"][:valid], atol=5e-5)
        scale = np.abs(ref["first_joint_logits"]).max()
        np.testing.assert_allclose(cap["first_logits"][0], ref["first_joint_logits"], atol=2e-5 * scale)


def test_language_changes_the_output_live(hf_model: Callable[[str], engine.Model]) -> None:
    """Nemotron 3.5: the language is a stream option, and set_language continues in a new segment."""
    m = hf_model("nemotron35_tiny")
    pcm = clip("nemotron35_tiny", "speech_short")
    by_lang = {c["language"]: c["token_ids"] for c in expected("nemotron35_tiny")["cases"]
               if c["clip"] == "speech_short" and c["lookahead"] == 13}  # fmt: skip
    assert len({tuple(v) for v in by_lang.values()}) > 1, "the fixture's languages must decode differently"
    s = m.stream(latency_ms=1120, language="en-US")
    s.feed(pcm)
    u = s.set_language("de-DE")
    assert engine.StreamEvent.SEGMENT_END in u.events and s.language == "de-DE"
    assert u.token_ids == by_lang["en-US"]
    s.feed(pcm)
    assert s.finish().token_ids == by_lang["en-US"] + by_lang["de-DE"]
    with pytest.raises(ValueError, match="unknown language"):
        m.stream(language="xx-XX")
