"""An import of ``sounddevice`` that hangs until the test lets it finish, as PortAudio's start does
with a sound server that never answers (``captionist.audio.sound_system``); and the wait for calls
left running past their limit (``captionist.audio.bounded_call``) to end."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

from captionist.audio.bounded_call import stuck_for


class StuckImport:
    """An import that waits until the test lets it finish (a sound server that does not answer)."""

    def __init__(self, module: object = None, error: BaseException | None = None) -> None:
        self.module = module if module is not None else SimpleNamespace(query_devices=lambda: ["Mic"])
        self.error = error
        self.release = threading.Event()
        self.calls = 0

    def __call__(self) -> object:
        self.calls += 1
        assert self.release.wait(30), "the test never let the import finish"
        if self.error is not None:
            raise self.error
        return self.module


def wait_until_answered(timeout_s: float = 10.0) -> None:
    """Until no audio call is left running past its limit (a test that hung the server answered)."""
    deadline = time.monotonic() + timeout_s
    while stuck_for() is not None:
        assert time.monotonic() < deadline, "a call to the hung sound server never returned"
        time.sleep(0.01)
