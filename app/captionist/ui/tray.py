"""System tray icon: start/stop, show/hide the overlay, click-through, show the window, help and about,
quit.

Usage::

    tray = Tray(icon, window, overlay, controller)   # the menu exists even where no tray does
    tray.menu                                         # QMenu (also used by tests)
    tray.show_message("“Alice” was said", "…")        # a notification; False where there is no tray

The tray menu is the always-reachable way back from click-through mode (with the global
shortcuts where they work, and ``Ctrl+Shift+T`` while a Captionist window has focus). The icon's
tooltip says whether Captionist is captioning, which is whether it is listening: with the window
closed to the tray, that is the one place to see it.
"""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication, QObject
from PySide6.QtGui import QAction, QIcon
from PySide6.QtWidgets import QMenu, QSystemTrayIcon

from captionist.pipeline.controller import SessionController
from captionist.pipeline.session_state import SessionState
from captionist.pipeline.signals import emit
from captionist.ui.main_window import MainWindow
from captionist.ui.overlay import CaptionOverlay
from captionist.ui.overlay_presence import OverlayPresence

TOOLTIPS = {
    SessionState.IDLE: "Captionist: not captioning",
    SessionState.RUNNING: "Captionist: captioning",
    SessionState.STOPPING: "Captionist: finishing the transcript",
}


class Tray(QObject):
    def __init__(
        self, icon: QIcon, window: MainWindow, overlay: CaptionOverlay, controller: SessionController
    ):
        super().__init__(window)
        self.window, self.overlay, self.controller = window, overlay, controller
        self.presence = OverlayPresence(overlay, controller, parent=self)
        self.menu = QMenu()
        self.start_stop = QAction("Start captions", self.menu)
        self.show_overlay = QAction("Show captions", self.menu, checkable=True)
        self.click_through = QAction("Click-through captions", self.menu, checkable=True)
        self.show_window = QAction("Show window", self.menu)
        self.help = QAction("Help", self.menu)
        self.about = QAction("About Captionist", self.menu)
        self.quit = QAction("Quit", self.menu)
        for action in (self.start_stop, self.show_overlay, self.click_through, self.show_window):
            self.menu.addAction(action)
        self.menu.addSeparator()
        self.menu.addAction(self.help)
        self.menu.addAction(self.about)
        self.menu.addSeparator()
        self.menu.addAction(self.quit)
        self.show_overlay.setChecked(overlay.settings.visible)
        self.click_through.setChecked(overlay.is_click_through())
        self.start_stop.triggered.connect(window.toggle_session)
        self.show_overlay.toggled.connect(self.set_overlay_visible)
        self.click_through.toggled.connect(overlay.set_click_through)
        overlay.click_through_changed.connect(self._show_click_through)
        self.show_window.triggered.connect(self._raise_window)
        self.help.triggered.connect(window.open_help)
        self.about.triggered.connect(window.show_about)
        self.quit.triggered.connect(QCoreApplication.quit)
        controller.state_changed.connect(self._on_state)
        self.icon: QSystemTrayIcon | None = None
        if QSystemTrayIcon.isSystemTrayAvailable():
            self.icon = QSystemTrayIcon(icon, self)
            self.icon.setToolTip(TOOLTIPS[SessionState.IDLE])
            self.icon.setContextMenu(self.menu)
            self.icon.activated.connect(self._on_activated)
            self.icon.show()

    def withdraw(self) -> None:
        """At quit: the icon goes at once, while the app may still be finishing out of sight."""
        if self.icon is not None:
            self.icon.hide()

    def show_message(self, title: str, body: str) -> bool:
        """A notification from the tray icon; False where there is no tray (nothing shown)."""
        if self.icon is None or not QSystemTrayIcon.supportsMessages():
            return False
        self.icon.showMessage(title, body, QSystemTrayIcon.MessageIcon.Information, 8000)
        return True

    def set_overlay_visible(self, visible: bool) -> None:
        """The user's choice (with "only while captioning", shown only while a session runs)."""
        self.overlay.settings.visible = visible
        self.presence.apply()
        if self.show_overlay.isChecked() != visible:
            self.show_overlay.setChecked(visible)
        emit(self.window.settings_changed)

    def _show_click_through(self, enabled: bool) -> None:
        self.click_through.blockSignals(True)
        self.click_through.setChecked(enabled)
        self.click_through.blockSignals(False)

    def _raise_window(self) -> None:
        self.window.showNormal()
        self.window.raise_()
        self.window.activateWindow()

    def _on_activated(self, reason: QSystemTrayIcon.ActivationReason) -> None:
        if reason == QSystemTrayIcon.ActivationReason.Trigger:
            self._raise_window()

    def _on_state(self, state: SessionState) -> None:
        self.start_stop.setText("Stop captions" if state == SessionState.RUNNING else "Start captions")
        self.start_stop.setEnabled(state != SessionState.STOPPING)
        if self.icon is not None:
            self.icon.setToolTip(TOOLTIPS[state])
