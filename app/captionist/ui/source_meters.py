"""The source list's level meters, ten times a second, whether or not a session runs.

Usage::

    meters = SourceMeters(panel, preview, session_levels=controller.levels, is_idle=..., notice=...)
    meters.restart()          # idle: (re)open the selected sources just for their meters
    meters.session_starting() # the session opens the devices itself: close the preview's
    meters.session_running()  # read the session capture's levels
    meters.session_idle()     # back to the preview (meters cleared first)

While no session runs the levels come from a ``LevelPreview`` (None: no meters until a session
starts); while one runs, from the session's own capture. A preview that cannot open its devices
is reported through ``notice`` and the window goes on. GUI thread only.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, QTimer

from captionist.ui.level_preview import LevelPreview
from captionist.ui.source_panel import SourcePanel

METER_INTERVAL_MS = 100


class SourceMeters(QObject):
    def __init__(
        self,
        panel: SourcePanel,
        preview: LevelPreview | None,
        session_levels: Callable[[], dict[str, float]],
        is_idle: Callable[[], bool],
        notice: Callable[[str], None],
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.panel, self.preview = panel, preview
        self._session_levels, self._is_idle, self._notice = session_levels, is_idle, notice
        self.timer = QTimer(self)
        self.timer.setInterval(METER_INTERVAL_MS)
        self.timer.timeout.connect(self._update)

    def restart(self) -> None:
        """While idle, keep the selected sources open just for their meters."""
        if self.preview is None or not self._is_idle():
            return
        error = self.preview.start(self.panel.selected())
        if error:
            self._notice(f"level meter: {error}")
        if self.preview.active:
            self.timer.start()

    def session_starting(self) -> None:
        if self.preview is not None:
            self.preview.stop()

    def session_running(self) -> None:
        self.timer.start()

    def session_idle(self) -> None:
        self.timer.stop()
        self.panel.set_levels({})
        self.restart()

    def _update(self) -> None:
        if self._is_idle() and self.preview is not None:
            self.panel.set_levels(self.preview.poll())
        else:
            self.panel.set_levels(self._session_levels())
