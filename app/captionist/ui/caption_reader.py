"""Captions for a screen reader: each finished sentence is sent to it, to be spoken or shown on a
braille display, while the user's focus stays where it is.

Usage (the GUI thread)::

    reader = CaptionReader(window.transcript.text, enabled=lambda: settings.screen_reader_captions)
    controller.caption.connect(reader.add)   # CaptionUpdate

Sent politely (after what the screen reader is saying), a piece at a time:
- a sentence once the next one has begun (``segment.sentence_starts``: "3.5" is not two);
- everything so far at an end of utterance, at the end of a session, and after ``QUIET_MS``
  without new words (models without punctuation, a speaker who stops mid-sentence);
- up to the last space once ``MAX_CHARS`` wait (a long run with no sentence end);
- a gap's mark ("[3.0 s of audio not transcribed: …]") as a piece of its own.

Off (``enabled`` false) nothing is kept, so turning it on starts with the next words.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, QTimer
from PySide6.QtWidgets import QWidget

from captionist.pipeline.events import CaptionUpdate
from captionist.transcript.segment import sentence_starts
from captionist.ui.announce import Urgency, announce

QUIET_MS = 2000
MAX_CHARS = 300


class CaptionReader(QObject):
    def __init__(self, about: QWidget, enabled: Callable[[], bool]) -> None:
        super().__init__(about)
        self._about, self._enabled = about, enabled
        self._pending = ""
        self._quiet = QTimer(self)
        self._quiet.setSingleShot(True)
        self._quiet.setInterval(QUIET_MS)
        self._quiet.timeout.connect(self.flush)

    def pending(self) -> str:
        """Words received and not yet sent."""
        return self._pending

    def add(self, update: CaptionUpdate) -> None:
        if not self._enabled():
            self._pending = ""
            self._quiet.stop()
            return
        if update.gap is not None:
            self.flush()
            self._say(update.gap.label())
            return
        for i, part in enumerate(update.new_lines()):
            if i:  # an utterance ended before this part
                self.flush()
            self._pending += part
            self._send_finished_sentences()
        if update.final:
            self.flush()
        elif self._pending.strip() and update.new_text:
            self._quiet.start()  # restarted by each update that brings words

    def flush(self) -> None:
        """Send everything received so far (nothing if it was turned off meanwhile)."""
        self._quiet.stop()
        text, self._pending = self._pending, ""
        if self._enabled():
            self._say(text)

    def _send_finished_sentences(self) -> None:
        starts = sentence_starts(self._pending)
        if starts:
            done, self._pending = self._pending[: starts[-1]], self._pending[starts[-1] :]
            self._say(done)
        if len(self._pending) > MAX_CHARS:
            cut = self._pending.rfind(" ", 0, MAX_CHARS)
            cut = cut if cut > 0 else MAX_CHARS
            done, self._pending = self._pending[:cut], self._pending[cut:]
            self._say(done)

    def _say(self, text: str) -> None:
        text = " ".join(text.split())
        if text:
            announce(self._about, text, Urgency.POLITE)
