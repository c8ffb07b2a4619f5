"""Shared test setup: offscreen Qt, the package on sys.path, isolated config dirs, fakes."""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

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
