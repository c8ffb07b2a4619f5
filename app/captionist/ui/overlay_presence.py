"""Whether the caption overlay is on screen: the user's choice, and with "only while captioning",
whether a session runs.

Usage::

    presence = OverlayPresence(overlay, controller)   # follows the session from now on
    presence.apply()       # after settings.overlay.visible or .only_while_captioning changed

``settings.overlay.visible`` is the user's choice (the tray's *Show captions*, its shortcut).
With ``only_while_captioning`` the overlay is also hidden while no session runs: an app started
at login waits in the tray without a caption bar over the screen all day. It appears when a
session starts and stays ``LINGER_MS`` after the session has finished, so its last words can be
read. GUI thread only.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, QTimer

from captionist.pipeline.controller import SessionController
from captionist.pipeline.session_state import SessionState
from captionist.ui.overlay import CaptionOverlay

LINGER_MS = 5000


class OverlayPresence(QObject):
    def __init__(self, overlay: CaptionOverlay, controller: SessionController, parent: QObject | None = None):
        super().__init__(parent)
        self._overlay = overlay
        self._captioning = controller.state is not SessionState.IDLE
        self.linger = QTimer(self)
        self.linger.setSingleShot(True)
        self.linger.setInterval(LINGER_MS)
        self.linger.timeout.connect(self.apply)
        controller.state_changed.connect(self._on_state)

    def wanted(self) -> bool:
        s = self._overlay.settings
        return s.visible and (not s.only_while_captioning or self._captioning or self.linger.isActive())

    def apply(self) -> None:
        if self._overlay.isVisible() != self.wanted():
            self._overlay.setVisible(self.wanted())

    def _on_state(self, state: SessionState) -> None:
        was, self._captioning = self._captioning, state is not SessionState.IDLE
        if was and not self._captioning:
            self.linger.start()  # the last words stay a while
        elif self._captioning:
            self.linger.stop()
        self.apply()
