"""Golden test: our converter + engine reproduce every reference token id and text (F32)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from captionist import engine

from .conftest import MODELS, load_clip, load_expected

CASES = [(m, i) for m in MODELS for i in range(len(load_expected(m)["cases"]))]


@pytest.mark.parametrize(("model", "index"), CASES, ids=[f"{m}-{i}" for m, i in CASES])
def test_offline_matches_reference(loaded: Callable[..., engine.Model], model: str, index: int) -> None:
    case = load_expected(model)["cases"][index]
    m = loaded(model)
    t = m.transcribe(
        load_clip(case["clip"]),
        delay_ms=case["delay_tokens"] * engine.TOKEN_MS,
        stop_at_end_of_utterance=True,
    )
    assert t.token_ids == case["token_ids"], f"{case['clip']} d={case['delay_tokens']}"
    assert t.text == case["text"]
    assert [tok.time_ms for tok in t.tokens] == [80 * j for j in range(len(t.tokens))]
    assert "".join(tok.piece for tok in t.tokens) == t.text


def test_default_delay_comes_from_the_tokenizer(loaded: Callable[..., engine.Model]) -> None:
    m = loaded("tiny_wide")
    assert m.default_delay_ms == 480
    case = next(c for c in load_expected("tiny_wide")["cases"] if c["delay_tokens"] == 6)
    assert m.transcribe(load_clip(case["clip"]), stop_at_end_of_utterance=True).token_ids == case["token_ids"]


def test_streaming_cases_also_match_offline_reference(loaded: Callable[..., engine.Model]) -> None:
    """The reference's own streaming generate gave these ids; our offline path must too."""
    for model in MODELS:
        for case in load_expected(model)["stream_cases"]:
            t = loaded(model).transcribe(
                load_clip(case["clip"]), delay_ms=case["delay_tokens"] * 80, stop_at_end_of_utterance=True
            )
            assert t.token_ids == case["token_ids"], (model, case["clip"], case["delay_tokens"])
