"""The caption overlay is shown as the user chose; with "only while captioning" it appears when a
session starts and leaves a few seconds after it has finished, and the tray's Show captions, its
shortcut and Preferences all keep to that."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QObject, Signal

from captionist.pipeline.session_state import SessionState
from captionist.settings import OverlaySettings, Settings
from captionist.ui.overlay import CaptionOverlay
from captionist.ui.overlay_presence import LINGER_MS, OverlayPresence
from captionist.ui.preferences import Preferences


class Sessions(QObject):
    state_changed = Signal(object)

    def __init__(self) -> None:
        super().__init__()
        self.state = SessionState.IDLE

    def go(self, state: SessionState) -> None:
        self.state = state
        self.state_changed.emit(state)


@pytest.fixture
def overlay(qtbot) -> CaptionOverlay:
    made = CaptionOverlay(OverlaySettings(only_while_captioning=True))
    qtbot.addWidget(made)
    return made


def test_only_while_captioning_shows_it_for_a_session_and_a_while_after(qtbot, overlay) -> None:
    sessions = Sessions()
    presence = OverlayPresence(overlay, sessions)
    presence.apply()
    assert not overlay.isVisible()  # waiting: no caption bar over the screen
    sessions.go(SessionState.RUNNING)
    assert overlay.isVisible()
    sessions.go(SessionState.STOPPING)
    assert overlay.isVisible()
    presence.linger.setInterval(50)
    sessions.go(SessionState.IDLE)
    assert overlay.isVisible() and presence.linger.isActive()  # its last words can still be read
    qtbot.waitUntil(lambda: not overlay.isVisible(), timeout=2000)
    assert LINGER_MS >= 3000  # long enough to read a line


def test_a_new_session_during_the_linger_keeps_it(qtbot, overlay) -> None:
    sessions = Sessions()
    presence = OverlayPresence(overlay, sessions)
    sessions.go(SessionState.RUNNING)
    sessions.go(SessionState.IDLE)
    sessions.go(SessionState.RUNNING)
    assert overlay.isVisible() and not presence.linger.isActive()


def test_the_users_choice_comes_first(qtbot, overlay) -> None:
    sessions = Sessions()
    presence = OverlayPresence(overlay, sessions)
    overlay.settings.visible = False  # Show captions off
    sessions.go(SessionState.RUNNING)
    assert not overlay.isVisible()
    overlay.settings.visible = True
    presence.apply()
    assert overlay.isVisible()
    overlay.settings.only_while_captioning = False
    sessions.go(SessionState.IDLE)
    presence.linger.stop()
    presence.apply()
    assert overlay.isVisible()  # without the option it stays, as before


def test_the_tray_and_preferences_go_through_it(qtbot, app_parts) -> None:
    win, controller = app_parts[0], app_parts[1]
    from captionist.ui.tray import Tray

    overlay = win.overlay
    tray = Tray(win.windowIcon(), win, overlay, controller)
    overlay.settings.visible = True
    tray.presence.apply()
    assert overlay.isVisible()
    prefs = Preferences(win.settings, overlay)
    qtbot.addWidget(prefs)
    prefs.only_while_captioning.setChecked(True)
    assert win.settings.overlay.only_while_captioning
    tray.presence.apply()  # the app does this on every settings change
    assert not overlay.isVisible()  # idle
    tray.set_overlay_visible(True)  # Show captions, while idle: still waits for a session
    assert not overlay.isVisible() and win.settings.overlay.visible


def test_a_settings_default_keeps_the_overlay_as_before() -> None:
    assert Settings().overlay.only_while_captioning is False
