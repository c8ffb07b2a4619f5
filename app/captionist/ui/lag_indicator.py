"""The status bar's lag figure: how far behind the captions are and what the load policy is doing.

Usage::

    indicator = LagIndicator()
    window.statusBar().addPermanentWidget(indicator)
    controller.stats.connect(indicator.show_stats)     # WorkerStats, several times a second

The text comes from ``lag_text`` (a pure function, one wording per ``LagState``); the widget also
sets its ``lagState`` property to the state's value and colours itself: amber while audio is about
to be skipped, red for a while after some was.
"""

from __future__ import annotations

from PySide6.QtWidgets import QLabel, QWidget

from captionist.pipeline.events import WorkerStats
from captionist.pipeline.lag import LagState

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


class LagIndicator(QLabel):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("lag —", parent)
        self.state = LagState.OK
        self.setToolTip("Audio captured but not yet transcribed")

    def show_stats(self, stats: WorkerStats) -> None:
        self.state = stats.lag_state
        self.setText(lag_text(stats))
        self.setProperty("lagState", stats.lag_state.value)
        self.setStyleSheet(_COLOURS[stats.lag_state])
