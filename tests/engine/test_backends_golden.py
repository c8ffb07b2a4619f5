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
from captionist.convert import convert_checkpoint
from captionist.engine import DeviceType

from .conftest import MODELS, load_clip, load_expected
from .fastconformer_fixtures import HF_MODELS, NEMO_MODELS, clip, expected, source

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


@pytest.fixture(scope="module")
def fc_file(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    root = tmp_path_factory.mktemp("backend_fc")

    def make(model: str) -> Path:
        out = root / f"{model}.gguf"
        if not out.exists():
            expected(model)
            convert_checkpoint(source(model), out, "f32", progress=False)
        return out

    return make


@pytest.mark.parametrize("device", PARAMS)
def test_voxtral_reference_ids(device: str, gguf_path: Callable[[str, str], Path]) -> None:
    for model in MODELS:
        m = engine.Model(gguf_path(model, "f32"), backend=device.lower(), n_threads=1)
        assert m.info["backend"] == device
        for case in load_expected(model)["cases"] + load_expected(model)["stream_cases"]:
            t = m.transcribe(
                load_clip(case["clip"]), delay_ms=case["delay_tokens"] * 80, stop_at_end_of_utterance=True
            )
            assert t.token_ids == case["token_ids"], (device, model, case["clip"], case["delay_tokens"])


@pytest.mark.parametrize("device", PARAMS)
def test_fastconformer_reference_ids(device: str, fc_file: Callable[[str], Path]) -> None:
    for model in HF_MODELS + NEMO_MODELS:
        m = engine.Model(fc_file(model), backend=device.lower(), n_threads=1)
        for case in expected(model)["cases"]:
            lat = (case["lookahead"] + 1) * FRAME_MS if "lookahead" in case else None
            t = m.transcribe(clip(model, case["clip"]), latency_ms=lat, language=case.get("language"))
            assert t.token_ids == case["token_ids"], (device, model, case["clip"], lat, case.get("language"))


@pytest.mark.parametrize("device", PARAMS)
def test_streaming_equals_offline(
    device: str, fc_file: Callable[[str], Path], gguf_path: Callable[[str, str], Path]
) -> None:
    rng = np.random.default_rng(5)

    def streamed(m: engine.Model, pcm: np.ndarray, **kw: object) -> list[int]:
        s = m.stream(**kw)  # type: ignore[arg-type]
        ids: list[int] = []
        pos = 0
        while pos < len(pcm):
            n = int(rng.integers(1, 12000))
            ids += [t.id for t in s.feed(pcm[pos : pos + n]).new_tokens]
            pos += n
        return ids + [t.id for t in s.finish().new_tokens]

    fc = engine.Model(fc_file("nemotron_tiny_ctx"), backend=device.lower(), n_threads=1)
    pcm = clip("nemotron_tiny_ctx", "speech_long")
    for lat in fc.info["latencies_ms"]:
        assert streamed(fc, pcm, latency_ms=lat) == fc.transcribe(pcm, latency_ms=lat).token_ids, (
            device,
            lat,
        )
    vox = engine.Model(gguf_path("tiny_small", "f32"), backend=device.lower(), n_threads=1)
    pcm = load_clip("speech_long.wav")
    assert streamed(vox, pcm, delay_ms=480) == vox.transcribe(pcm, delay_ms=480).token_ids, device
