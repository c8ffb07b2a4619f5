"""End to end: the desktop app started while the sound server hangs (a stopped ``pulseaudio``).

PortAudio's start asks the server about its devices and waits for an answer that never comes.
The app used to wait with it, for ever, without a window; now (``audio.sound_system``) it comes up,
says the sound system is not answering, and once the server answers it lists the source and
captions what is said, with nothing pressed but Start. ``gui_session`` drives the real app.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.e2e.conftest import SINK, start_pulse
from tests.e2e.test_live_capture import CAPTURE_S, ESPEAK, EXPECTED_WORDS, MAY_MISS, SPEECH, in_order

pytestmark = pytest.mark.e2e


def test_the_app_starts_while_the_sound_server_hangs_and_captions_once_it_answers(
    model: Path, tmp_path: Path
) -> None:
    with start_pulse(tmp_path / "pulse") as pulse:  # its own daemon: this test stops it
        result_file = tmp_path / "result.json"
        env = dict(pulse.env(), CAPTIONIST_HOME=str(tmp_path / "home"), QT_QPA_PLATFORM="offscreen")
        cmd = [sys.executable, "-m", "tests.e2e.gui_session", "--source", f"pulse:{SINK}.monitor",
               "--seconds", f"{CAPTURE_S:g}", "--out", str(result_file)]  # fmt: skip
        root = Path(__file__).resolve().parent.parent.parent
        pulse.hang()
        hung = True
        lines: queue.Queue[str] = queue.Queue()
        proc = subprocess.Popen(cmd, env=env, cwd=root, stderr=subprocess.PIPE, text=True)
        assert proc.stderr is not None
        stderr = proc.stderr
        reader = threading.Thread(target=lambda: [lines.put(line) for line in stderr], daemon=True)
        reader.start()
        seen: list[str] = []
        try:
            while not any("app built" in line for line in seen):
                try:
                    seen.append(lines.get(timeout=90))  # the app is up long before, or never
                except queue.Empty:
                    pytest.fail(f"the app did not start while the sound server hung: {seen}")
            built = next(line for line in seen if "app built" in line)
            assert "the sound system is not answering" in built, seen
            pulse.answer()
            hung = False
            recording = pulse.wait_for_recording(timeout_s=60)
            if recording:
                pulse.say(SPEECH, SINK, espeak_args=ESPEAK)
            proc.wait(timeout=120)
            reader.join(timeout=10)
        finally:
            if hung:
                pulse.answer()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        while not lines.empty():
            seen.append(lines.get())
        log = "".join(seen)
        assert recording, f"the app never recorded once the server answered: {log}"
        assert proc.returncode == 0, log
        result = json.loads(result_file.read_text())
        assert result["started"], result
        missing = in_order(EXPECTED_WORDS, result["transcript_text"])
        assert len(missing) <= MAY_MISS, f"words not heard: {missing}; {result}"


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
    assert "captionist: error: the sound system did not answer within 15 s" in out.stderr, out.stderr


def test_a_sound_server_that_hangs_during_a_session_cannot_freeze_stop_or_start(
    model: Path, tmp_path: Path
) -> None:
    # PortAudio's stop and open waited for the stopped server for ever, on the window's thread: Stop
    # froze the app and the session never finished. Now Stop finishes the session (its transcript
    # whole), Start says the server is not answering, and once it answers Start works again.
    with start_pulse(tmp_path / "pulse") as pulse:
        result_file = tmp_path / "result.json"
        env = dict(pulse.env(), CAPTIONIST_HOME=str(tmp_path / "home"), QT_QPA_PLATFORM="offscreen")
        cmd = [sys.executable, "-m", "tests.e2e.hung_session", "--source", f"pulse:{SINK}.monitor",
               "--out", str(result_file)]  # fmt: skip
        root = Path(__file__).resolve().parent.parent.parent
        proc = subprocess.Popen(cmd, env=env, cwd=root, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)  # fmt: skip
        assert proc.stdin is not None and proc.stdout is not None
        hung = False
        try:
            assert proc.stdout.readline().strip() == "recording"
            assert pulse.wait_for_recording(timeout_s=60)
            pulse.say(SPEECH, SINK, espeak_args=ESPEAK)
            time.sleep(2.0)  # the model's delay: the last words reach the transcript
            pulse.hang()
            hung = True
            proc.stdin.write("hung\n")
            proc.stdin.flush()
            assert proc.stdout.readline().strip() == "tried"
            pulse.answer()
            hung = False
            proc.stdin.write("answered\n")
            proc.stdin.flush()
            _, stderr = proc.communicate(timeout=120)
        finally:
            if hung:
                pulse.answer()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode == 0, stderr
    result = json.loads(result_file.read_text())
    assert result["started"] and result["finished"], result
    missing = in_order(EXPECTED_WORDS, result["transcript_text"])
    assert len(missing) <= MAY_MISS, f"words not heard: {missing}; {result}"
    assert result["start_while_hung"] is False
    assert "the sound system is not answering" in result["banner_while_hung"], result
    assert result["start_after"] is True, result
