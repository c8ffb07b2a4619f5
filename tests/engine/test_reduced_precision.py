"""F16 and quantized files load, run, and agree with the reference where its margin allows.

Teacher-forced: the decoder is fed the reference tokens, so one near-tie cannot derail the rest.
At every step whose reference top-1/top-2 margin exceeds the type's error bound, our argmax must
be the reference token. Bounds are fractions of the model's logit scale (max |logit| of the
reference's first step): the largest logit errors we accept for each type.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from captionist import _engine, engine

from .conftest import MODELS, REFERENCE, load_clip, load_expected

# type -> (margin bound, max |logits0 error|) as fractions of the logit scale, min steps checked
BOUNDS = {
    "f16": (0.005, 0.002, 300),
    "bf16": (0.02, 0.02, 300),
    "Q8_0": (0.04, 0.03, 90),
    # Random tiny models have near-tie logits almost everywhere, so few steps are confident enough
    # to judge 4-5 bit files: those few (speech onsets, EOS on silence) must still agree.
    "Q5_K": (0.1, 0.1, 10),
    "Q4_K_M": (0.15, 0.25, 10),
    "Q4_K": (0.15, 0.25, 10),
}


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("kind", list(BOUNDS))
def test_teacher_forced_agreement(loaded: Callable[..., engine.Model], model: str, kind: str) -> None:
    ref0 = np.load(REFERENCE / model / "intermediates_speech_short_d6.npz")["logits0"]
    scale = float(np.abs(ref0).max())
    margin_frac, logit_frac, min_checked = BOUNDS[kind]
    margin_bound, logit_bound = margin_frac * scale, logit_frac * scale
    m = loaded(model, kind)
    assert m.info["tensor_types"].get("f32", 0) < sum(m.info["tensor_types"].values())
    checked = agree = 0
    for case in load_expected(model)["cases"]:
        if case["delay_tokens"] not in (1, 6, 30):
            continue
        s = _engine.Stream(
            m._m, latency_ms=case["delay_tokens"] * 80, stop_at_end_of_utterance=True, capture=True
        )
        s.set_forced_tokens(case["token_ids"])
        s.feed(load_clip(case["clip"]))
        s.finish()
        ref = case["token_ids"] + ([m.info["eos_id"]] if case["ended_with_eos"] else [])
        logits = s.captured()["logits"]
        assert len(logits) >= len(ref)
        for j, want in enumerate(ref):
            if case["margins"][j] > margin_bound:
                checked += 1
                agree += int(np.argmax(logits[j]) == want)
    assert checked >= min_checked, "too few steps above the bound for the test to mean anything"
    assert agree == checked, f"{checked - agree} of {checked} confident steps disagree"

    s = _engine.Stream(m._m, latency_ms=480, stop_at_end_of_utterance=True, capture=True)
    s.feed(load_clip("speech_short.wav"))
    s.finish()
    assert np.abs(s.captured()["logits"][0] - ref0).max() < logit_bound
