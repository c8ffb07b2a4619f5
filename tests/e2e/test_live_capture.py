"""End to end: speech played into a PulseAudio null sink, captured from its monitor by `captionist live`.

A private PulseAudio daemon (``pulse_server``) gets a null sink; ``espeak-ng`` speaks into it while
``captionist live --device pulse:<sink>.monitor -o transcript.srt`` runs as a real process: the
sounddevice/PortAudio capture, the ALSA ``pulse`` plugin, soxr resampling, the worker, the engine
and the transcript writer are all the shipped code. The transcript must parse back and the engine
must have said something for that capture; a silent capture of the same monitor is the control
(the model says nothing for digital silence), so the words come from the captured speech.

Model: by default the tiny random-weight reference model, which emits tokens but not the spoken
words. Hook for the trained demo model: set ``CAPTIONIST_E2E_MODEL`` to a GGUF that transcribes
English and the test also asserts ``EXPECTED_WORDS`` in the transcript.
"""

from __future__ import annotations

import ctypes.util
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

import pytest

from captionist.transcript import parse, read_journal
from tests.e2e.pulse_server import PulseServer, PulseUnavailable

pytestmark = pytest.mark.e2e

DATA = Path(__file__).resolve().parent.parent / "data"
SINK = "captionist_e2e"
SPEECH = "The quick brown fox jumps over the lazy dog. Captions appear while you speak."
EXPECTED_WORDS = ("quick", "brown", "fox", "lazy", "dog")
CAPTURE_S = 10.0  # the speech lasts about 5 s at espeak-ng's 150 words per minute


def _unavailable(reason: str) -> NoReturn:
    """Skip, or fail where the environment promises the end-to-end pieces (``.ci/run``)."""
    if os.environ.get("CAPTIONIST_E2E_REQUIRED") == "1":
        pytest.fail(f"{reason} (CAPTIONIST_E2E_REQUIRED=1)")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def pulse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PulseServer]:
    if ctypes.util.find_library("portaudio") is None:
        _unavailable("end-to-end capture needs PortAudio (apt-get install libportaudio2)")
    try:
        server = PulseServer.start(tmp_path_factory.mktemp("pulse"))
    except PulseUnavailable as exc:
        _unavailable(f"end-to-end capture needs PulseAudio and espeak-ng: {exc}")
    try:
        server.add_null_sink(SINK)
        yield server
    finally:
        server.close()


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bool]:
    """(model file, whether it transcribes real words)."""
    trained = os.environ.get("CAPTIONIST_E2E_MODEL")
    if trained:
        return Path(trained), True
    pytest.importorskip("captionist._engine")
    from captionist.convert import convert_checkpoint

    gguf = tmp_path_factory.mktemp("model") / "tiny.gguf"
    convert_checkpoint(DATA / "reference" / "tiny_wide" / "hf", gguf, "f32", progress=False)
    return gguf, False


def _captionist(*args: str) -> list[str]:
    return [sys.executable, "-m", "captionist", *args]


def _live(pulse: PulseServer, model: Path, output: Path, duration: float) -> subprocess.Popen[str]:
    cmd = _captionist(
        "live", "--model", str(model), "--device", f"pulse:{SINK}.monitor",
        "-o", str(output), "--duration", f"{duration:g}", "--backend", "cpu",
    )  # fmt: skip
    return subprocess.Popen(
        cmd, env=pulse.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=output.parent
    )


def test_devices_lists_the_monitor_source(pulse: PulseServer) -> None:
    out = subprocess.run(_captionist("devices"), env=pulse.env(), capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    line = next((ln for ln in out.stdout.splitlines() if f"pulse:{SINK}.monitor" in ln), None)
    assert line is not None, out.stdout
    assert f"Monitor of {SINK} (system audio)" in line and "PulseAudio" in line


def test_live_captures_speech_from_the_monitor(
    pulse: PulseServer, model: tuple[Path, bool], tmp_path: Path
) -> None:
    model_path, transcribes = model
    output = tmp_path / "transcript.srt"
    proc = _live(pulse, model_path, output, CAPTURE_S)
    try:
        recording = pulse.wait_for_recording(timeout_s=30)
        if recording:
            pulse.say(SPEECH, SINK)
        stdout, stderr = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert recording, f"captionist never opened the monitor source: {stderr}"
    assert proc.returncode == 0, stderr
    assert "captionist: error" not in stderr, stderr  # rc 1 covers a failed session
    assert f"listening to Monitor of {SINK}" in stderr

    # The engine's output for this capture: committed tokens in the session journal, and the
    # captions printed to the terminal.
    journals = list(tmp_path.glob("*.journal.jsonl"))
    assert len(journals) == 1, sorted(p.name for p in tmp_path.iterdir())
    tokens = read_journal(journals[0]).tokens
    assert tokens, "the engine emitted nothing for the captured speech"
    assert stdout.strip(), "no captions were printed"

    captions = parse("srt", output.read_text(encoding="utf-8"))
    assert captions, "the transcript file holds no captions"
    assert all(a.end_ms <= b.start_ms for a, b in zip(captions, captions[1:], strict=False))
    assert captions[-1].end_ms <= (CAPTURE_S + 1.0) * 1000
    text = " ".join(c.one_line for c in captions)
    assert text.strip()
    if transcribes:
        missing = [w for w in EXPECTED_WORDS if w not in text.lower()]
        assert not missing, f"words not heard: {missing}; transcript: {text!r}"


def test_silent_monitor_gives_an_empty_transcript(
    pulse: PulseServer, model: tuple[Path, bool], tmp_path: Path
) -> None:
    # The control for the test above: nothing plays, so nothing is captioned.
    assert pulse.recording_streams() == 0
    output = tmp_path / "silence.srt"
    proc = _live(pulse, model[0], output, 3.0)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr
    assert "captionist: error" not in stderr, stderr  # rc 1 covers a failed session
    assert stdout.strip() == ""
    assert output.is_file() and parse("srt", output.read_text(encoding="utf-8")) == []
