"""The source list's level meters, ten times a second while the window is on screen.

Usage::

    meters = SourceMeters(panel, preview, session_levels=controller.levels, is_idle=..., notice=...,
                          parent=window)   # follows ``window`` on and off the screen
    meters.restart()          # idle: (re)open the selected sources just for their meters
    meters.session_starting() # the session opens the devices itself: close the preview's
    meters.session_running()  # read the session capture's levels
    meters.session_idle()     # back to the preview (meters cleared first)

While no session runs the levels come from a ``LevelPreview`` (None: no meters until a session
starts); while one runs, from the session's own capture. A preview that cannot open its devices
is reported through ``notice`` and the window goes on.

The preview opens the microphone, so it runs only while the window is on screen: hidden (in the
tray), minimized or not yet shown, Captionist keeps its hands off every device until captions
start. An open microphone lights the system's recording indicator, keeps the audio hardware
awake, and switches a Bluetooth headset to its low-quality call mode for every app, none of which
someone who merely left Captionist running expects. GUI thread only.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtWidgets import QWidget

from captionist.ui.level_preview import LevelPreview
from captionist.ui.on_screen import on_screen
from captionist.ui.source_panel import SourcePanel

METER_INTERVAL_MS = 100
WINDOW_EVENTS = (QEvent.Type.Show, QEvent.Type.Hide, QEvent.Type.WindowStateChange)


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
        self._window = parent if isinstance(parent, QWidget) else None
        self.on_screen = self._window is None or on_screen(self._window)  # no window: always
        if self._window is not None:
            self._window.installEventFilter(self)

    def restart(self) -> None:
        """While idle and on screen, keep the selected sources open just for their meters."""
        if self.preview is None or not self._is_idle():
            return
        if not self.on_screen:
            self._close_preview()
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
        if self.on_screen:
            self.timer.start()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt's name)
        """The window was shown, hidden, minimized or restored (a minimized window also gets a hide
        event from most window systems; the state change covers the rest)."""
        if watched is self._window and event.type() in WINDOW_EVENTS:
            self._set_on_screen(on_screen(self._window))
        return False

    def _set_on_screen(self, shown: bool) -> None:
        if shown == self.on_screen:
            return
        self.on_screen = shown
        if not self._is_idle():  # the session's capture stays open; only its meters pause
            if shown:
                self.timer.start()
            else:
                self.timer.stop()
            return
        self.restart()

    def _close_preview(self) -> None:
        self.timer.stop()
        if self.preview is not None:
            self.preview.stop()
        self.panel.set_levels({})

    def session_idle(self) -> None:
        self.timer.stop()
        self.panel.set_levels({})
        self.restart()

    def _update(self) -> None:
        if self._is_idle() and self.preview is not None:
            self.panel.set_levels(self.preview.poll())
        else:
            self.panel.set_levels(self._session_levels())
