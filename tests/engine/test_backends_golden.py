"""The golden checks on every non-CPU backend this build of ggml has (the CPU runs them everywhere
else in this folder). In CI that is Vulkan on Mesa's software driver (lavapipe), which ggml hides
unless GGML_VK_VISIBLE_DEVICES names it: tests/conftest.py does, and the engine's "auto" never
picks a software device, so the rest of the suite still runs on the CPU.

CAPTIONIST_VULKAN_REQUIRED=1 (set by .ci/run) turns "no Vulkan device" into a failure."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from captionist import engine
from captionist.engine import DeviceType

from .conftest import MODELS, load_clip, load_expected
from .fastconformer_fixtures import HF_MODELS, NEMO_MODELS, clip, expected

FRAME_MS = 80


def accelerators() -> list[str]:
    try:
        return [d.name for d in engine.compute_devices() if d.type is not DeviceType.CPU]
    except Exception:  # no engine built: the rest of the suite reports that
        return []


DEVICES = accelerators()
PARAMS = DEVICES or [
    pytest.param("none", marks=pytest.mark.skip(reason="this ggml build has no non-CPU device"))
]


def test_vulkan_is_there_when_required() -> None:
    if os.environ.get("CAPTIONIST_VULKAN_REQUIRED") != "1":
        pytest.skip("CAPTIONIST_VULKAN_REQUIRED is not set")
    assert any(name.lower().startswith("vulkan") for name in DEVICES), engine.compute_devices()


# ggml's GPU kernels may round through F16 (Vulkan does where the device has F16 arithmetic, as
# lavapipe has) and sum in another order, so a token whose reference margin (top-1 minus top-2
# logit) is tiny may flip, and everything after it follows the new prefix. The rule: every step up
# to the first one whose reference margin is below MARGIN matches the reference exactly, and the
# encoder outputs agree with the CPU's to F16 accuracy.
MARGIN = 0.03
F16_TOL = 5e-3  # of the largest magnitude (measured on lavapipe: 1.8e-3)


def first_divergence(ours: list[int], ref: list[int]) -> int | None:
    for i, (a, b) in enumerate(zip(ours, ref, strict=False)):
        if a != b:
            return i
    return None if len(ours) == len(ref) else min(len(ours), len(ref))


@pytest.mark.parametrize("device", PARAMS)
def test_voxtral_reference_ids(device: str, gguf_path: Callable[[str, str], Path]) -> None:
    exact = 0
    for model in MODELS:
        m = engine.Model(gguf_path(model, "f32"), backend=device.lower(), n_threads=1)
        assert m.info["backend"] == device
        for case in load_expected(model)["cases"]:
            t = m.transcribe(
                load_clip(case["clip"]), delay_ms=case["delay_tokens"] * 80, stop_at_end_of_utterance=True
            )
            i = first_divergence(t.token_ids, case["token_ids"])
            where = (device, model, case["clip"], case["delay_tokens"], i)
            if i is None:
                exact += 1
                continue
            margins = case["margins"]
            # we left the reference at a near-tie, not at a clear-cut step
            assert i < len(margins) and margins[i] < MARGIN, where
    assert exact >= 30, exact  # most of the 60 cases are exact


@pytest.mark.parametrize("device", PARAMS)
def test_fastconformer_reference_ids(device: str, fc_f32: Callable[[str], Path]) -> None:
    """The FastConformer fixtures record each case's smallest margin: clear-cut cases must match."""
    checked = 0
    for model in HF_MODELS + NEMO_MODELS:
        m = engine.Model(fc_f32(model), backend=device.lower(), n_threads=1)
        for case in expected(model)["cases"]:
            margin = case.get("min_margin", case.get("min_margin_all_steps"))
            lat = (case["lookahead"] + 1) * FRAME_MS if "lookahead" in case else None
            t = m.transcribe(clip(model, case["clip"]), latency_ms=lat, language=case.get("language"))
            if margin is not None and margin < MARGIN and t.token_ids != case["token_ids"]:
                continue
            assert t.token_ids == case["token_ids"], (device, model, case["clip"], lat, case.get("language"))
            checked += 1
    assert checked >= 20, checked


@pytest.mark.parametrize("device", PARAMS)
def test_encoder_outputs_match_the_cpu(device: str, fc_f32: Callable[[str], Path]) -> None:
    """Streamed in odd pieces on the device (kept graphs, ring views) vs the CPU offline."""
    from captionist import _engine

    rng = np.random.default_rng(5)
    for model in ("nemotron_tiny_ctx", "parakeet_eou_tiny_ctx"):
        pcm = clip(model, "speech_long")
        for lat in engine.Model(fc_f32(model), backend="cpu").info["latencies_ms"]:
            outs = []
            for dev, sizes in (("cpu", [len(pcm)]), (device.lower(), list(rng.integers(1, 12000, size=200)))):
                s = _engine.Stream(
                    engine.Model(fc_f32(model), backend=dev, n_threads=1)._m, latency_ms=lat, capture=True
                )
                pos = 0
                for n in sizes:
                    s.feed(pcm[pos : pos + int(n)])
                    pos += int(n)
                    if pos >= len(pcm):
                        break
                if pos < len(pcm):
                    s.feed(pcm[pos:])
                s.finish()
                outs.append(np.asarray(s.captured()["encoder_out"]))
            cpu, dev_out = outs
            assert cpu.shape == dev_out.shape, (model, lat)
            assert np.abs(cpu - dev_out).max() <= F16_TOL * np.abs(cpu).max(), (model, lat)
