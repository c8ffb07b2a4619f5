"""Lists the audio sources once a sound server that did not answer at start finally does.

Usage::

    SoundSystemWatch(sound_system, window.refresh_sources, parent=window)   # nothing else to call

The app starts without waiting for a sound server that has hung (``audio.sound_system``); its source
list then shows the "not answering" error. This watch looks every ``POLL_MS`` until PortAudio's start
has finished, then calls ``refresh`` once (the list fills and the error goes, or a failure's own
error replaces it) and stops. GUI thread only.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, QTimer

from captionist.audio.sound_system import SoundSystem

POLL_MS = 250


class SoundSystemWatch(QObject):
    def __init__(
        self, system: SoundSystem, refresh: Callable[[], None], parent: QObject | None = None
    ) -> None:
        super().__init__(parent)
        self.system, self.refresh = system, refresh
        self.timer = QTimer(self)
        self.timer.setInterval(POLL_MS)
        self.timer.timeout.connect(self.check)
        self.timer.start()

    def check(self) -> None:
        if self.system.starting:
            return
        self.timer.stop()
        self.refresh()
