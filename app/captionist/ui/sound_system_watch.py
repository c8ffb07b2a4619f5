"""Tells the window when a sound server that did not answer does again.

Usage::

    SoundSystemWatch(sound_system, window.sound_system_answers, parent=window)   # nothing else to call

Two things give up on a hung server without waiting for it: the app's start (``audio.sound_system``:
the source list shows the "not answering" error) and each call into PortAudio (``bounded_call``:
Start fails, the level meters close). This watch calls ``answered`` on the GUI thread once the
server answers: when PortAudio's start has finished (looked at every ``POLL_MS``, then never again;
``system`` None or already started: not watched), and each time the last call that outlived its
limit has returned. The window then lists the sources, reopens the meters and withdraws the
message, which nothing else would do until the user pressed Refresh or Start. GUI thread only.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, QTimer, Signal, Slot

from captionist.audio.bounded_call import when_answering_again
from captionist.audio.sound_system import SoundSystem
from captionist.pipeline.signals import emit

POLL_MS = 250


class SoundSystemWatch(QObject):
    _call_returned = Signal()  # from the thread of the call that returned: queued to the GUI thread

    def __init__(
        self, system: SoundSystem | None, answered: Callable[[], None], parent: QObject | None = None
    ) -> None:
        super().__init__(parent)
        self.system, self.answered = system, answered
        self.timer = QTimer(self)
        self.timer.setInterval(POLL_MS)
        self.timer.timeout.connect(self.check)
        if system is not None and system.starting:
            self.timer.start()
        self._call_returned.connect(self._on_call_returned)  # a slot of this GUI-thread object: queued
        # emitting on a watch that is gone raises RuntimeError, which bounded_call ignores
        self.destroyed.connect(when_answering_again(lambda: emit(self._call_returned)))

    @Slot()
    def _on_call_returned(self) -> None:
        self.answered()

    def check(self) -> None:
        if self.system is not None and self.system.starting:
            return
        self.timer.stop()
        self.answered()
