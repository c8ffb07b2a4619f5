"""PortAudio started on its own thread, so that a sound server that never answers cannot stop
Captionist from starting.

Usage::

    sd = shared_sound_system()     # sounddevice being imported (PortAudio starting) on a thread
    sd.wait(4.0)                   # True once it has finished, well or not
    sd.query_devices()             # the module's own functions, once it is ready; before that, or
                                   # when it failed, AudioUnavailable saying why
    sd.error                       # None: ready or still starting

Importing ``sounddevice`` starts PortAudio, which asks every ALSA device about itself, PulseAudio's
and PipeWire's among them. A sound server that has hung (a stopped or wedged ``pulseaudio``,
``pipewire-pulse``) accepts the connection and never replies, and the import waits for ever, in C,
where neither Ctrl+C nor a timer can reach it: the app never showed its window, and ``captionist
devices`` never printed anything. So the import runs on a daemon thread. The app waits a moment for
it (``START_WAIT_S``), then starts and says what it is waiting for, and lists the sources once the
server answers (``ui.sound_system_watch``); the commands give up with a clear error
(``devices.import_sounddevice``).

A failed import (PortAudio not installed) is tried again by the next ``shared_sound_system()``; a
stuck one is not started twice (the second would wait on the first's import lock anyway).
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from contextlib import suppress
from typing import Any

from captionist.audio.devices import AudioUnavailable

START_WAIT_S = 4.0  # the app's wait before it starts without sources (PortAudio starts in < 1 s)
STUCK_SERVER_HINT = "a stuck PulseAudio or PipeWire does this; restarting it helps"


def _import_sounddevice() -> Any:
    import sounddevice

    return sounddevice


def _dup_stderr() -> int | None:
    try:
        return os.dup(2)
    except OSError:  # no stderr at all (a GUI process on Windows)
        return None


class SoundSystem:
    """``sounddevice`` being imported on a thread; its attributes once it is ready."""

    def __init__(self, importer: Callable[[], Any] | None = None) -> None:
        self._importer = importer or _import_sounddevice
        self._done = threading.Event()
        self._module: Any = None
        self._error: str | None = None
        self._stderr_lock = threading.Lock()
        self._stderr = _dup_stderr()  # the process's stderr, for a start that hangs (``wait``)
        self._keep_thread = sys.platform == "win32"  # see _run
        self.thread = threading.Thread(target=self._run, name="captionist-portaudio-start", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self._module = self._importer()
        except OSError as exc:  # no libportaudio
            self._error = f"audio is unavailable: {exc} (install PortAudio, e.g. libportaudio2)"
        except Exception as exc:  # PortAudio's own start failed (sounddevice raises its error then)
            self._error = f"audio is unavailable: PortAudio did not start: {exc}"
        finally:
            self._done.set()
            with self._stderr_lock:
                if self._stderr is not None:
                    os.close(self._stderr)
                    self._stderr = None
        if self._keep_thread and self._module is not None:
            # PortAudio's WASAPI and DirectSound start COM on this thread and keep the device
            # objects they made in its apartment; an apartment ends with its thread, so this one
            # stays (idle) for the life of the process, as the app's main thread did before.
            threading.Event().wait()

    def wait(self, timeout_s: float | None = None) -> bool:
        """Whether the import has finished (well or not), waiting up to ``timeout_s`` for it.

        A wait that times out gives file descriptor 2 back to the process's stderr: sounddevice
        points it at /dev/null while PortAudio starts (ALSA's probing is noisy), so a start that
        hangs would swallow every message the app and the commands print meanwhile, their errors
        included. (sounddevice restores the same stderr when its start ends.)"""
        if self._done.wait(timeout_s):
            return True
        with self._stderr_lock:
            if self._stderr is not None and not self._done.is_set():
                with suppress(OSError):
                    os.dup2(self._stderr, 2)
        return False

    @property
    def starting(self) -> bool:
        return not self._done.is_set()

    @property
    def ready(self) -> bool:
        return self._done.is_set() and self._module is not None

    @property
    def error(self) -> str | None:
        """Why audio is unavailable; None while starting and once ready."""
        return self._error if self._done.is_set() else None

    @property
    def module(self) -> Any:
        """The ``sounddevice`` module; ``AudioUnavailable`` while starting or after a failure."""
        if self._done.is_set() and self._module is not None:
            return self._module
        raise AudioUnavailable(self.why_unavailable())

    def why_unavailable(self) -> str:
        """The error once finished (empty when ready); while starting, what it waits for."""
        if self._done.is_set():
            return self._error or ""
        return (
            f"the sound system is not answering: PortAudio's start is waiting for it "
            f"({STUCK_SERVER_HINT}). The audio sources are listed once it answers."
        )

    def __getattr__(self, name: str) -> Any:  # only for names this class does not have itself
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.module, name)


_lock = threading.Lock()
_shared: SoundSystem | None = None


def shared_sound_system() -> SoundSystem:
    """The process's ``SoundSystem``; a new one only where the last one failed."""
    global _shared
    with _lock:
        if _shared is None or _shared.error is not None:
            _shared = SoundSystem()
        return _shared
