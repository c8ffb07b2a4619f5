"""PortAudio's start on its own thread (``captionist.audio.sound_system``): a sound server that never
answers leaves the caller free, says why, and its sources come once it answers."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from captionist.audio import sound_system
from captionist.audio.devices import AudioUnavailable, import_sounddevice
from captionist.audio.sound_system import SoundSystem, shared_sound_system
from tests.fakes.stuck_import import StuckImport


def test_a_start_that_does_not_answer_leaves_the_caller_free_and_says_why() -> None:
    stuck = StuckImport()
    system = SoundSystem(stuck)
    assert not system.wait(0.05)
    assert system.starting and not system.ready and system.error is None
    with pytest.raises(AudioUnavailable, match="the sound system is not answering"):
        system.query_devices()
    with pytest.raises(AudioUnavailable, match="PulseAudio or PipeWire"):
        _ = system.module
    stuck.release.set()
    assert system.wait(5)
    assert system.ready and not system.starting and system.error is None
    assert system.query_devices() == ["Mic"]  # the module's own function now
    assert system.module is stuck.module


@pytest.mark.parametrize(
    ("error", "message"),
    [
        (OSError("PortAudio library not found"), "PortAudio library not found (install PortAudio"),
        (RuntimeError("Error initializing PortAudio"), "PortAudio did not start: Error initializing"),
    ],
)
def test_a_start_that_fails_says_why(error: BaseException, message: str) -> None:
    stuck = StuckImport(error=error)
    stuck.release.set()
    system = SoundSystem(stuck)
    assert system.wait(5)
    assert not system.ready and not system.starting
    assert system.error is not None and message in system.error
    with pytest.raises(AudioUnavailable, match=message.split(" (")[0]):
        system.query_devices()


def test_python_probes_of_special_names_are_not_forwarded() -> None:
    # copy, pickle and numpy look up dunder names: they must get AttributeError, not the audio error
    stuck = StuckImport()
    system = SoundSystem(stuck)
    assert not hasattr(system, "__array_interface__")
    stuck.release.set()


def test_the_process_shares_one_start_and_tries_again_after_a_failure(monkeypatch) -> None:
    monkeypatch.setattr(sound_system, "_shared", None)
    failing = StuckImport(error=OSError("no libportaudio"))
    failing.release.set()
    monkeypatch.setattr(sound_system, "_import_sounddevice", failing)
    first = shared_sound_system()
    assert first.wait(5) and first.error
    working = StuckImport()
    monkeypatch.setattr(sound_system, "_import_sounddevice", working)
    second = shared_sound_system()
    assert second is not first  # the failed start is tried again
    assert shared_sound_system() is second  # a running one is not started twice
    working.release.set()
    assert second.wait(5) and second.ready
    assert shared_sound_system() is second and working.calls == 1


def test_a_command_gives_up_with_a_clear_error(monkeypatch) -> None:
    monkeypatch.setattr(sound_system, "_shared", None)
    stuck = StuckImport()
    monkeypatch.setattr(sound_system, "_import_sounddevice", stuck)
    with pytest.raises(AudioUnavailable, match=r"did not answer within 0\.1 s: .*restarting it helps"):
        import_sounddevice(wait_s=0.1)
    stuck.release.set()
    assert import_sounddevice(wait_s=5) is stuck.module


# sounddevice points fd 2 at /dev/null while PortAudio starts; this importer does the same and hangs.
STDERR_SCRIPT = textwrap.dedent(
    """
    import os, sys, threading
    from captionist.audio.sound_system import SoundSystem
    release = threading.Event()

    def quiet_and_stuck():
        old = os.dup(2)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        os.close(devnull)
        release.wait(30)
        os.dup2(old, 2)
        return object()

    system = SoundSystem(quiet_and_stuck)
    while not os.path.samefile("/proc/self/fd/2", os.devnull):
        pass  # until the importer has silenced fd 2
    if sys.argv[1] == "wait":
        assert not system.wait(0.1)
    os.write(2, b"said while the sound system hangs\\n")
    release.set()
    system.wait(5)
    """
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/fd")
@pytest.mark.parametrize(("call", "heard"), [("wait", True), ("no-wait", False)])
def test_a_wait_that_times_out_gives_stderr_back(call: str, heard: bool) -> None:
    # "no-wait" is the control: without the wait's timeout the message is swallowed, as it was
    out = subprocess.run(
        [sys.executable, "-c", STDERR_SCRIPT, call], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert ("said while the sound system hangs" in out.stderr) is heard, out.stderr


@pytest.mark.parametrize(("platform", "kept"), [("win32", True), ("linux", False)])
def test_on_windows_the_thread_that_started_portaudio_stays(monkeypatch, platform: str, kept: bool) -> None:
    # WASAPI's device objects live in the COM apartment of the thread that started PortAudio
    monkeypatch.setattr(sys, "platform", platform)
    stuck = StuckImport()
    stuck.release.set()
    system = SoundSystem(stuck)
    monkeypatch.undo()
    assert system.wait(5) and system.ready
    system.thread.join(timeout=0.5 if kept else 10)
    assert system.thread.is_alive() is kept
