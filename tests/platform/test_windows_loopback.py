"""Windows system audio on a real Windows machine: WASAPI loopback through PyAudioWPatch.

Skipped on every other OS. The hosted workflow (.github/workflows/platform-tests.yml) runs it on
a Windows runner after installing the Scream virtual sound card (runners have no audio device).

Run it by hand on Windows (PowerShell, from a checkout; the engine is not needed)::

    py -3.11 -m venv .venv; .venv\\Scripts\\activate
    python -m pip install "PyAudioWPatch>=0.2.12" numpy soxr sounddevice PySide6 platformdirs pyyaml
    python -m pip install pytest pytest-qt
    $env:PYTHONPATH = "app"; python -m pytest -m platform tests/platform/test_windows_loopback.py -v

Leave the speakers' volume up and nothing else playing: the test plays a 440 Hz tone for about
1.5 s on the default output and expects to hear it back through that output's loopback.
"""

from __future__ import annotations

import sys
import time

import numpy as np
import pytest

pytestmark = [
    pytest.mark.platform,
    pytest.mark.skipif(sys.platform != "win32", reason="WASAPI loopback exists only on Windows"),
]

NOISE_FLOOR_DBFS = -50.0  # digital silence through loopback is -inf; a -13 dBFS tone is far above


def test_every_output_is_a_system_audio_source_default_first() -> None:
    import pyaudiowpatch

    from captionist.audio.devices import SourceBackend, list_sources
    from captionist.audio.wasapi_loopback import list_loopback_sources

    loopback = list_loopback_sources()
    assert loopback, "no WASAPI loopback device: is there an output device (and Windows Audio running)?"
    pa = pyaudiowpatch.PyAudio()
    try:
        default = pa.get_default_wasapi_loopback()["name"].removesuffix(" [Loopback]")
    finally:
        pa.terminate()
    assert loopback[0].name == default
    assert all(s.label().endswith(" (system audio)") for s in loopback)
    listed = [s for s in list_sources() if s.backend is SourceBackend.WASAPI_LOOPBACK]
    assert [s.id for s in listed] == [s.id for s in loopback]


def test_a_tone_on_the_default_output_is_captured_through_loopback() -> None:
    import sounddevice

    from captionist.audio.capture import Capture, rms_dbfs
    from captionist.audio.wasapi_loopback import list_loopback_sources

    source = list_loopback_sources()[0]
    cap = Capture([source], sd=sounddevice)
    cap.start()
    rate = int(sounddevice.query_devices(kind="output")["default_samplerate"])
    t = np.arange(int(rate * 1.5)) / rate
    tone = (0.3 * np.sin(2 * np.pi * 440.0 * t)).astype(np.float32)
    sounddevice.play(tone, rate)  # returns at once; PortAudio plays it on its own thread
    chunks = []
    deadline = time.monotonic() + 2.5
    while time.monotonic() < deadline:
        pcm = cap.read(timeout=0.1)
        if pcm is not None:
            chunks.append(pcm)
    sounddevice.wait()
    cap.stop()
    while (pcm := cap.read(0)) is not None:
        chunks.append(pcm)
    captured = np.concatenate(chunks) if chunks else np.zeros(0, np.float32)
    assert captured.size >= 16000, f"only {captured.size / 16000:.2f} s captured"
    loudest = max(rms_dbfs(captured[i : i + 16000]) for i in range(0, captured.size - 15999, 1600))
    assert loudest > NOISE_FLOOR_DBFS, f"loudest 1 s of loopback is {loudest:.1f} dBFS"
    assert cap.poll_events() == []
