"""Say a message through the screen reader, without moving the focus.

Usage::

    announce(window, "Microphone disconnected", Urgency.INTERRUPT)   # read out now
    announce(window, "Transcript saved", Urgency.POLITE)              # after what is being read

A message that appears in a window (an error strip, a notice) is seen by a sighted user at once, but a
screen reader reads only what has the focus; Qt's announcement event (AT-SPI, UI Automation and
NSAccessibility's announcements) tells it to read the message too.

Qt connects to the screen reader only once the event loop runs (on Linux it asks the session bus
for the accessibility bus and waits for the answer), so a problem shown as the app starts would be
said to nobody. A message said before that waits, at most ``WAIT_FOR_READER_S`` seconds, for the
connection; with no screen reader running it is dropped then. GUI thread only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

import shiboken6
from PySide6.QtCore import QElapsedTimer, QTimer
from PySide6.QtGui import QAccessible, QAccessibleAnnouncementEvent
from PySide6.QtWidgets import QWidget

WAIT_FOR_READER_S = 10.0
POLL_MS = 100


class Urgency(Enum):
    POLITE = QAccessible.AnnouncementPoliteness.Polite  # after the speech in progress
    INTERRUPT = QAccessible.AnnouncementPoliteness.Assertive  # at once


def _send(widget: QWidget, message: str, urgency: Urgency) -> None:
    event = QAccessibleAnnouncementEvent(widget, message)
    event.setPoliteness(urgency.value)
    QAccessible.updateAccessibility(event)


@dataclass
class _Waiting:
    widget: QWidget
    message: str
    urgency: Urgency
    since: QElapsedTimer


class _Queue:
    """Messages said before a screen reader was connected, sent once it is (or dropped)."""

    def __init__(self, listening: Callable[[], bool] = QAccessible.isActive) -> None:
        self.listening = listening
        self.waiting: list[_Waiting] = []
        self.timer: QTimer | None = None

    def say(self, widget: QWidget, message: str, urgency: Urgency) -> None:
        if self.listening():
            _send(widget, message, urgency)
            return
        since = QElapsedTimer()
        since.start()
        self.waiting.append(_Waiting(widget, message, urgency, since))
        if self.timer is None:
            self.timer = QTimer()
            self.timer.setInterval(POLL_MS)
            self.timer.timeout.connect(self.poll)
        self.timer.start()

    def poll(self) -> None:
        alive = [w for w in self.waiting if shiboken6.isValid(w.widget)]
        if self.listening():
            for w in alive:
                _send(w.widget, w.message, w.urgency)
            alive = []
        self.waiting = [w for w in alive if w.since.elapsed() < WAIT_FOR_READER_S * 1000]
        if not self.waiting and self.timer is not None:
            self.timer.stop()


_queue = _Queue()


def announce(widget: QWidget, message: str, urgency: Urgency) -> None:
    """Have a screen reader say ``message`` (about ``widget``); nothing when none is running."""
    if message:
        _queue.say(widget, message, urgency)
