"""A problem that comes up while the window is closed to the tray or minimized is a tray
notification (or, without a tray, the taskbar asks for attention); on screen the banner is enough."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QSystemTrayIcon, QWidget

from captionist.ui import app as app_module
from captionist.ui.away_notifier import TITLE, AwayNotifier
from tests.fakes.fake_engine import FakeModel
from tests.fakes.fake_hotkeys import FakeHotkeyFactory
from tests.ui.conftest import wait_for_model


def test_only_a_window_away_passes_problems_on(qtbot) -> None:
    window = QWidget()
    qtbot.addWidget(window)
    told: list[tuple[str, str]] = []
    alerted: list[QWidget] = []
    away = AwayNotifier(window, show_message=lambda t, b: told.append((t, b)) or True, alert=alerted.append)
    away.problem("not shown: the window is not up yet")  # hidden: passed on
    window.show()
    away.problem("on screen: the banner says it")
    window.showMinimized()
    away.problem("minimized")
    assert told == [(TITLE, "not shown: the window is not up yet"), (TITLE, "minimized")]
    assert away.shown == ["not shown: the window is not up yet", "minimized"] and alerted == []


def test_without_a_tray_the_taskbar_entry_asks_for_attention(qtbot) -> None:
    window = QWidget()
    qtbot.addWidget(window)
    alerted: list[QWidget] = []
    away = AwayNotifier(window, show_message=lambda t, b: False, alert=alerted.append)
    away.problem("the microphone is gone")
    assert alerted == [window]


def test_a_device_lost_while_captioning_from_the_tray_is_a_notification(
    qtbot, fake_sd, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(QSystemTrayIcon, "isSystemTrayAvailable", staticmethod(lambda: True))
    monkeypatch.setattr(QSystemTrayIcon, "supportsMessages", staticmethod(lambda: True))
    notifications: list[tuple[str, str]] = []

    def show_message(self, title: str, body: str, *_: object) -> None:
        notifications.append((title, body))

    monkeypatch.setattr(QSystemTrayIcon, "showMessage", show_message)
    fake_sd.add_device("USB Mic", rate=16000, default=True)
    parts = app_module.build_app(
        sd=fake_sd, model_loader=lambda p, b: FakeModel(), shortcut_listener=FakeHotkeyFactory()
    )
    qtbot.addWidget(parts.window)
    qtbot.addWidget(parts.overlay)
    parts.app.aboutToQuit.disconnect(parts.at_exit)
    try:
        wait_for_model(qtbot, parts.window)
        with qtbot.waitSignal(parts.controller.state_changed):
            parts.tray.start_stop.trigger()  # started from the tray: the window was never opened
        assert not parts.window.isVisible()
        with qtbot.waitSignal(parts.window.error_banner.added, timeout=10_000):
            fake_sd.disconnect("USB Mic")
        assert notifications == [(TITLE, parts.window.error_banner.text())]
        assert "USB Mic" in notifications[0][1]
        parts.window.show()  # back on screen: the next problem stays in the banner
        parts.window.show_error("something else")
        assert len(notifications) == 1
    finally:
        with qtbot.waitSignal(parts.controller.session_finished, timeout=10_000):
            parts.controller.stop()
        parts.save_timer.stop()
        parts.tray.icon.hide()
