"""``CaptionHold``: caption updates wait until the transcript file has them, but not for long.

Usage (the controller's thread)::

    hold = CaptionHold(wait_s=0.5)
    hold.show.connect(on_caption)            # CaptionUpdate, in order, once saved or overdue
    hold.unsaved.connect(on_unsaved)         # seconds the file is behind the captions; 0.0: caught up
    number = hold.arrive(update, decoded)    # then saver.submit(number, update)
    hold.saved(number)                       # the saver has written updates up to number
    meter = LagMeter(..., shown=hold.shown_through)
    hold.release_all()                       # the session is over

Rules:

* An update is shown once it is saved, so what the user has read is on disk and a crash loses none
  of it. On a healthy disk that is a few milliseconds.
* An update that has waited ``wait_s`` is shown anyway (with every update after it): captions must
  not stop because a network share hangs. From then on the file is behind the screen; once it has
  been behind for ``notice_s``, ``unsaved`` says by how many seconds, every ``tick_ms``, and says
  0.0 once the file has caught up.
* The lag counts held updates as not shown: ``shown_through`` is how far (samples decoded) the
  screen is current while updates wait; up to the first word of the oldest one, or, for a gap, up
  to the update before it.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass

from PySide6.QtCore import QObject, QTimer, Signal, Slot

from captionist.pipeline.events import CaptionUpdate
from captionist.pipeline.lag import samples_of
from captionist.pipeline.signals import emit

UNSAVED_NOTICE_S = 2.0  # ``unsaved`` speaks up once the file is this far behind the captions


@dataclass(frozen=True)
class _Held:
    number: int
    update: CaptionUpdate
    arrived: float  # time.monotonic()
    shown_through: int  # samples decoded as far as the screen is current without it


class CaptionHold(QObject):
    show = Signal(object)  # CaptionUpdate
    unsaved = Signal(float)  # seconds the file is behind the captions shown; 0.0: caught up

    def __init__(
        self,
        wait_s: float = 0.5,
        notice_s: float = UNSAVED_NOTICE_S,
        tick_ms: int = 100,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self._wait_s, self._notice_s = wait_s, notice_s
        self._held: deque[_Held] = deque()
        self._numbered = 0  # updates that arrived
        self._arrived_decoded = 0  # samples decoded when the last update arrived
        self._unsaved_since: float | None = None  # arrival of the oldest update shown before it was saved
        self._unsaved_through = 0  # the last update shown before it was saved
        self._said = False  # ``unsaved`` has spoken since the file last caught up
        self._timer = QTimer(self)
        self._timer.setInterval(tick_ms)
        self._timer.timeout.connect(self._tick)

    def arrive(self, update: CaptionUpdate, decoded: int) -> int:
        """Hold ``update``, which arrived with ``decoded`` samples decoded; returns its number."""
        self._numbered += 1
        self._held.append(
            _Held(self._numbered, update, time.monotonic(), self._current_without(update, decoded))
        )
        self._arrived_decoded = decoded
        if not self._timer.isActive():
            self._timer.start()
        return self._numbered

    def _current_without(self, update: CaptionUpdate, decoded: int) -> int:
        if update.gap is not None:
            return self._arrived_decoded
        if not update.new_tokens:
            return decoded  # it only ends an utterance: nothing on screen is missing
        first_word = samples_of(min(t.time_ms for t in update.new_tokens))
        return min(decoded, max(self._arrived_decoded, first_word))

    def shown_through(self) -> int | None:
        """How far (samples decoded) the captions on screen are current; None when none waits."""
        return self._held[0].shown_through if self._held else None

    @Slot(int)
    def saved(self, number: int) -> None:
        """Updates up to ``number`` are written (or failed to be: they are not held for ever)."""
        self._show(number)
        if self._unsaved_since is not None and number >= self._unsaved_through:
            self._caught_up()

    def release_all(self) -> None:
        """Show whatever waits and stop (the session ended)."""
        self._timer.stop()
        self._show(self._numbered)
        self._caught_up()

    def _show(self, through: int) -> None:
        while self._held and self._held[0].number <= through:
            emit(self.show, self._held.popleft().update)

    def _caught_up(self) -> None:
        self._unsaved_since = None
        if self._said:
            self._said = False
            emit(self.unsaved, 0.0)

    @Slot()
    def _tick(self) -> None:
        now = time.monotonic()
        if self._held and now - self._held[0].arrived >= self._wait_s:
            if self._unsaved_since is None:
                self._unsaved_since = self._held[0].arrived
            self._unsaved_through = self._held[-1].number
            self._show(self._unsaved_through)
        if self._unsaved_since is not None and now - self._unsaved_since >= self._notice_s:
            self._said = True
            emit(self.unsaved, max(0.1, round(now - self._unsaved_since, 1)))  # 0.0 means caught up
        elif not self._held and self._unsaved_since is None:
            self._timer.stop()
