"""An import of ``sounddevice`` that hangs until the test lets it finish, as PortAudio's start does
with a sound server that never answers (``captionist.audio.sound_system``)."""

from __future__ import annotations

import threading
from types import SimpleNamespace


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
