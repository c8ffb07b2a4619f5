"""Shared test setup: offscreen Qt, the package on sys.path, isolated config dirs, fakes."""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# ggml's Vulkan backend hides software devices; the first Vulkan device (Mesa's lavapipe on a machine
# without a GPU) is shown to the tests, which run the golden checks on it (engine/test_backends_golden.py).
# The engine's backend="auto" never picks a software device, so everything else stays on the CPU.
os.environ.setdefault("GGML_VK_VISIBLE_DEVICES", "0")

# Tests run against the installed package (`pip install .` or, while developing, `pip install -e .`),
# which carries the compiled engine; the repository root is on the path for `tests.fakes`.
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from tests.fakes.fake_sounddevice import FakeSoundDevice  # noqa: E402


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own config/data/transcript folders (paths.CAPTIONIST_HOME)."""
    home = tmp_path / "home"
    monkeypatch.setenv("CAPTIONIST_HOME", str(home))
    return home


@pytest.fixture(autouse=True)
def _one_backend_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    """The app and the commands set ggml's loading policy (``backend_guard``: crashed backends
    skipped) for their process before its first engine use. The tests share one process and one
    engine: a test that builds the app must not leave its guard's policy (its skips, its trial
    folder) to whichever test uses the engine first, so here every module loads, unguarded. The
    guard's policy is tested in processes of its own (tests/engine/test_backend_loading.py)."""
    from captionist import engine_backends

    monkeypatch.setattr(engine_backends, "set_policy", lambda policy: None)


def speech_like(rate: int, pattern: list[tuple[float, bool]], amp: float = 0.3) -> np.ndarray:
    """Tone bursts and silences: [(seconds, voiced), ...] -> float32 mono at ``rate``."""
    parts = []
    for seconds, voiced in pattern:
        n = int(round(seconds * rate))
        t = np.arange(n) / rate
        parts.append(
            (amp * np.sin(2 * np.pi * 220 * t)).astype(np.float32) if voiced else np.zeros(n, np.float32)
        )
    return np.concatenate(parts)


@pytest.fixture
def fake_sd() -> FakeSoundDevice:
    return FakeSoundDevice()


@pytest.fixture
def wav_48k(tmp_path: Path) -> Path:
    """A 48 kHz stereo WAV: 0.5 s tone, 0.5 s silence, 0.4 s tone, 0.3 s silence."""
    import soundfile

    mono = speech_like(48000, [(0.5, True), (0.5, False), (0.4, True), (0.3, False)])
    path = tmp_path / "speech.wav"
    soundfile.write(path, np.stack([mono, mono], axis=1), 48000, subtype="FLOAT")
    return path


# --- real FastConformer models, converted from the committed tiny fixtures once per test run ------

FASTCONFORMER_DATA = ROOT / "tests" / "data" / "fastconformer"


def _converted(tmp_path_factory: pytest.TempPathFactory, src: Path, name: str) -> Path:
    """``src`` (an HF folder or a .nemo file) converted to an F32 GGUF; skips while it is absent."""
    if not src.exists():
        pytest.skip(f"{src.relative_to(ROOT)} is not in this checkout yet")
    pytest.importorskip("captionist._engine")
    from captionist.convert import convert_checkpoint

    out = tmp_path_factory.mktemp("fastconformer") / name
    convert_checkpoint(src, out, "f32", progress=False)
    return out


@pytest.fixture(scope="session")
def nemotron_tiny_gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Nemotron Speech Streaming layout, tiny: latencies 80/160/560/1120 ms, punctuation, no languages."""
    return _converted(tmp_path_factory, FASTCONFORMER_DATA / "nemotron_tiny" / "hf", "nemotron-tiny.gguf")


@pytest.fixture(scope="session")
def nemotron35_tiny_gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Nemotron 3.5 ASR layout, tiny: a language dictionary with aliases and ``auto``."""
    return _converted(tmp_path_factory, FASTCONFORMER_DATA / "nemotron35_tiny" / "hf", "nemotron35-tiny.gguf")


@pytest.fixture(scope="session")
def parakeet_eou_tiny_gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Parakeet Realtime EOU layout, tiny: one latency (160 ms), <EOU> tokens, no punctuation."""
    return _converted(
        tmp_path_factory, FASTCONFORMER_DATA / "parakeet_eou_tiny" / "model.nemo", "parakeet-tiny.gguf"
    )
