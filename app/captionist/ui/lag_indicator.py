"""The status bar's lag figure: how far behind the captions are and what the load policy is doing.

Usage::

    indicator = LagIndicator()
    window.statusBar().addPermanentWidget(indicator)
    controller.stats.connect(indicator.show_stats)     # WorkerStats, several times a second

The text comes from ``lag_text`` (a pure function, one wording per ``LagState``); the widget also
sets its ``lagState`` property to the state's value and colours itself: amber while audio is about
to be skipped, red for a while after some was. A screen reader is told when the captions start to
fall behind, when audio is skipped (at once) and when they have caught up again; the same news is
not repeated within ``REPEAT_AFTER_S`` (a lag that hovers at the warning's threshold).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from PySide6.QtWidgets import QLabel, QWidget

from captionist.pipeline.events import WorkerStats
from captionist.pipeline.lag import LagState
from captionist.ui.announce import Urgency, announce

REPEAT_AFTER_S = 30.0
_BEHIND = (LagState.WARNING, LagState.SHEDDING)

_COLOURS = {
    LagState.OK: "",
    LagState.CATCHING_UP: "",
    LagState.WARNING: "color: #b36b00; font-weight: bold;",
    LagState.SHEDDING: "color: #c62828; font-weight: bold;",
}


def lag_text(stats: WorkerStats) -> str:
    """One line for the status bar, e.g. ``lag 3.1 s - falling behind: skipping audio in 4 s``."""
    figure = f"lag {stats.lag_ms / 1000:.1f} s"
    state = stats.lag_state
    if state == LagState.SHEDDING:
        return f"{figure} - fell behind: {stats.dropped_ms / 1000:.1f} s of audio skipped so far"
    if state == LagState.WARNING:
        if stats.shed_in_s is None:
            return f"{figure} - falling behind: audio will be skipped if this grows"
        return f"{figure} - falling behind: skipping audio in {max(1, round(stats.shed_in_s))} s"
    if state == LagState.CATCHING_UP:
        return f"{figure} - latency raised to {stats.latency_ms} ms to keep up"
    return figure


def change_news(before: LagState, stats: WorkerStats) -> tuple[str, Urgency] | None:
    """What a screen reader is told when the state goes from ``before`` to ``stats.lag_state``."""
    state = stats.lag_state
    if state == LagState.SHEDDING and before != LagState.SHEDDING:
        return f"Captions fell behind; audio was skipped. {lag_text(stats)}", Urgency.INTERRUPT
    if state == LagState.WARNING and before not in _BEHIND:
        return f"Captions are falling behind. {lag_text(stats)}", Urgency.POLITE
    if state not in _BEHIND and before in _BEHIND:
        return f"Captions caught up. {lag_text(stats)}", Urgency.POLITE
    return None


class LagIndicator(QLabel):
    def __init__(self, parent: QWidget | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__("lag —", parent)
        self.state = LagState.OK
        self.setToolTip("Audio captured but not yet transcribed")
        self._clock = clock
        self._told: dict[LagState, float] = {}  # when a screen reader was last told of each state

    def session_started(self) -> None:
        """A new session keeps up until its figures say otherwise: how the last one ended is not
        news (no "caught up" for it), and its first fall behind is."""
        self.state = LagState.OK

    def show_stats(self, stats: WorkerStats) -> None:
        news = change_news(self.state, stats)
        self.state = stats.lag_state
        if news is not None:
            now, last = self._clock(), self._told.get(stats.lag_state)
            if last is None or now - last >= REPEAT_AFTER_S:
                self._told[stats.lag_state] = now
                announce(self, *news)
        self.setText(lag_text(stats))
        self.setProperty("lagState", stats.lag_state.value)
        self.setStyleSheet(_COLOURS[stats.lag_state])
