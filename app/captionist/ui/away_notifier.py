"""Problems that come up while the window is away reach the user anyway.

Usage::

    away = AwayNotifier(window, show_message=tray.show_message)
    window.error_banner.added.connect(away.problem)   # each new red line
    away.shown                                        # the problems passed on, oldest first

The red banner is in the main window. Closed to the tray (how Captionist starts at login) or
minimized, nobody sees it: captions stop because a microphone was unplugged or the model failed,
and the overlay just goes quiet. So a problem shown while the window is not on screen is also a
tray notification; where there is no tray (only a minimized window), the window's taskbar entry
asks for attention (``QApplication.alert``). On screen, the banner is enough. GUI thread only.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtWidgets import QApplication, QWidget

from captionist.ui.on_screen import on_screen

TITLE = "Captionist: a problem"
ShowMessage = Callable[[str, str], bool]  # (title, body) -> shown by the tray


class AwayNotifier:
    def __init__(
        self,
        window: QWidget,
        show_message: ShowMessage,
        alert: Callable[[QWidget], None] = QApplication.alert,
    ) -> None:
        self._window, self._show_message, self._alert = window, show_message, alert
        self.shown: list[str] = []

    def problem(self, message: str) -> None:
        """``message`` was added to the window's problems: pass it on if the window is away."""
        if on_screen(self._window):
            return
        self.shown.append(message)
        if not self._show_message(TITLE, message):
            self._alert(self._window)
