"""End to end: the desktop app and the commands with a sound server that hangs (a stopped
``pulseaudio``, ``PulseServer.hang``).

PortAudio waits for the server's answer with no limit. The app used to wait with it: for ever,
without a window, when the server hung before it started; at Stop and Start when it hung during a
run. Now (``audio.sound_system``, ``audio.bounded_call``) the app comes up and says the sound
system is not answering, Stop finishes the session, and once the server answers the sources come
and Start works. ``gui_session`` and ``hung_session`` drive the real app in its own process.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.e2e.conftest import SINK, start_pulse
from tests.e2e.pulse_server import PulseServer
from tests.e2e.test_live_capture import ESPEAK, EXPECTED_WORDS, MAY_MISS, SPEECH, in_order

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parent.parent.parent


@contextmanager
def app_driven_by(
    module: str, pulse: PulseServer, tmp_path: Path, *args: str, **popen: object
) -> Iterator[subprocess.Popen[str]]:
    """``python -m tests.e2e.<module> --source <the monitor> --out result.json *args`` with its own
    Captionist home; on the way out the server answers again and the process is gone."""
    env = dict(pulse.env(), CAPTIONIST_HOME=str(tmp_path / "home"), QT_QPA_PLATFORM="offscreen")
    cmd = [sys.executable, "-m", f"tests.e2e.{module}", "--source", f"pulse:{SINK}.monitor",
           "--out", str(tmp_path / "result.json"), *args]  # fmt: skip
    proc = subprocess.Popen(cmd, env=env, cwd=ROOT, text=True, **popen)  # type: ignore[call-overload]
    try:
        yield proc
    finally:
        pulse.answer()  # harmless if it already does
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_the_app_starts_while_the_sound_server_hangs_and_lists_the_source_once_it_answers(
    model: Path, tmp_path: Path
) -> None:
    # Captioning once the server answers is the next test's; this one is the start.
    lines: queue.Queue[str] = queue.Queue()
    seen: list[str] = []
    with start_pulse(tmp_path / "pulse") as pulse:  # its own daemon: this test stops it
        pulse.hang()
        with app_driven_by("gui_session", pulse, tmp_path, "--seconds", "1", stderr=subprocess.PIPE) as proc:
            stderr = proc.stderr
            assert stderr is not None
            reader = threading.Thread(target=lambda: [lines.put(line) for line in stderr], daemon=True)
            reader.start()
            while not any("app built" in line for line in seen):
                try:
                    seen.append(lines.get(timeout=90))  # the app is up long before, or never
                except queue.Empty:
                    pytest.fail(f"the app did not start while the sound server hung: {seen}")
            built = next(line for line in seen if "app built" in line)
            assert "the sound system is not answering" in built, seen
            pulse.answer()
            recording = pulse.wait_for_recording(timeout_s=60)  # the source, listed and ticked
            proc.wait(timeout=120)
            reader.join(timeout=10)
    while not lines.empty():
        seen.append(lines.get())
    log = "".join(seen)
    assert recording, f"the app never recorded once the server answered: {log}"
    assert proc.returncode == 0, log
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["started"] and result["sources"] == [f"pulse:{SINK}.monitor"], result


def test_a_sound_server_that_hangs_during_a_session_cannot_freeze_stop_or_start(
    model: Path, tmp_path: Path
) -> None:
    # PortAudio's stop and open waited for the stopped server for ever, on the window's thread: Stop
    # froze the app and the session never finished. Now Stop finishes the session (its transcript
    # whole), Start says the server is not answering, and once it answers Start works again.
    pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    with (
        start_pulse(tmp_path / "pulse") as pulse,
        app_driven_by("hung_session", pulse, tmp_path, **pipes) as proc,
    ):
        assert proc.stdin is not None and proc.stdout is not None
        assert proc.stdout.readline().strip() == "recording"
        assert pulse.wait_for_recording(timeout_s=60)
        pulse.say(SPEECH, SINK, espeak_args=ESPEAK)
        time.sleep(2.0)  # the model's delay: the last words reach the transcript
        pulse.hang()
        proc.stdin.write("hung\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "tried"
        pulse.answer()
        proc.stdin.write("answered\n")
        proc.stdin.flush()
        _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr
    result = json.loads((tmp_path / "result.json").read_text())
    assert "stopped sending audio; waiting for it to come back" in result["banner_stalled"], result
    assert result["started"] and result["finished"], result
    missing = in_order(EXPECTED_WORDS, result["transcript_text"])
    assert len(missing) <= MAY_MISS, f"words not heard: {missing}; {result}"
    assert result["start_while_hung"] is False
    assert "the sound system is not answering" in result["banner_while_hung"], result
    # once it answers, that line goes and the level meters reopen, with nothing pressed
    assert "not answering" not in result["banner_when_answered"], result
    assert result["meters_when_answered"] is True, result
    assert result["start_after"] is True, result


def test_a_command_says_the_sound_server_is_not_answering(tmp_path: Path) -> None:
    # `captionist devices` used to wait for ever, and sounddevice's start had pointed stderr at
    # /dev/null meanwhile, so the error would not have been seen either.
    with start_pulse(tmp_path / "pulse") as pulse:
        pulse.hang()
        try:
            out = subprocess.run(
                [sys.executable, "-m", "captionist", "devices"],
                env=pulse.env(), capture_output=True, text=True, timeout=90,
            )  # fmt: skip
        finally:
            pulse.answer()
    assert out.returncode != 0 and out.stdout == ""
    assert "captionist: error: the sound system did not answer within 10 s" in out.stderr, out.stderr
