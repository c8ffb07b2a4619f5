"""The app wired to a fake global-shortcut listener: a press on the listener's own thread starts and
stops captions, shows and hides the overlay and toggles click-through, in the GUI thread, and the
click-through hint names the shortcut that undoes it."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator

import pytest
from PySide6.QtCore import Qt

from captionist import paths
from captionist.pipeline.session_state import SessionState
from captionist.shortcut_keys import ShortcutAction, to_pynput
from captionist.ui.app import AppParts, build_app
from captionist.ui.global_shortcuts import ShortcutState
from captionist.ui.overlay import CLICK_THROUGH_SHORTCUT
from tests.fakes.fake_engine import FakeModel
from tests.fakes.fake_hotkeys import FakeHotkeyFactory

START_STOP, SHOW_OVERLAY, CLICK_THROUGH = (
    "<ctrl>+<alt>+<shift>+s",
    "<ctrl>+<alt>+<shift>+o",
    "<ctrl>+<alt>+<shift>+t",
)


@pytest.fixture
def app(qtbot, fake_sd, monkeypatch) -> Iterator[tuple[AppParts, FakeHotkeyFactory]]:
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.delenv("XDG_SESSION_TYPE", raising=False)
    fake_sd.add_device("Mic", rate=16000, default=True)  # ticked: the default input
    fake_sd.devices[0].audio = None  # live, nothing replayed: a session stays open until stopped
    model = paths.models_dir() / "m.gguf"
    model.parent.mkdir(parents=True)
    model.write_bytes(b"GGUF")
    factory = FakeHotkeyFactory()
    parts = build_app(sd=fake_sd, model_loader=lambda path, backend: FakeModel(), shortcut_listener=factory)
    qtbot.addWidget(parts.window)
    qtbot.addWidget(parts.overlay)
    yield parts, factory
    parts.app.aboutToQuit.disconnect(parts.at_exit)
    parts.save_timer.stop()
    parts.controller.shutdown()


def press(qtbot, parts: AppParts, factory: FakeHotkeyFactory, hotkey: str) -> None:
    """Press ``hotkey`` on the listener's thread and wait until the GUI thread has acted on it."""
    with qtbot.waitSignal(parts.shortcuts.triggered):
        factory.listener.press(hotkey)


def test_the_app_starts_the_listener_with_the_saved_keys(app) -> None:
    parts, factory = app
    assert parts.shortcuts.state is ShortcutState.ACTIVE
    assert sorted(factory.listener.hotkeys) == sorted([START_STOP, SHOW_OVERLAY, CLICK_THROUGH])


def test_click_through_from_another_thread_changes_in_the_gui_thread(app, qtbot) -> None:
    parts, factory = app
    overlay = parts.overlay
    threads: list[threading.Thread] = []
    overlay.click_through_changed.connect(
        lambda _: threads.append(threading.current_thread()), Qt.ConnectionType.DirectConnection
    )  # direct: records the thread that changed it
    press(qtbot, parts, factory, CLICK_THROUGH)
    assert overlay.is_click_through() and parts.tray.click_through.isChecked()
    assert overlay.hint_text() == "Click-through on — press Ctrl+Alt+Shift+T to turn it off"
    press(qtbot, parts, factory, CLICK_THROUGH)
    assert not overlay.is_click_through() and overlay.hint_text().startswith("Click-through off")
    assert threads == [threading.main_thread()] * 2
    assert all(t is not threading.main_thread() for t in factory.listener.callback_threads)


def test_show_hide_overlay_from_another_thread(app, qtbot) -> None:
    parts, factory = app
    assert parts.overlay.isVisible()
    press(qtbot, parts, factory, SHOW_OVERLAY)
    assert not parts.overlay.isVisible() and not parts.settings.overlay.visible
    assert not parts.tray.show_overlay.isChecked()
    press(qtbot, parts, factory, SHOW_OVERLAY)
    assert parts.overlay.isVisible() and parts.tray.show_overlay.isChecked()


def test_start_stop_from_another_thread_is_the_start_stop_button(app, qtbot) -> None:
    parts, factory = app
    window, controller = parts.window, parts.controller
    qtbot.waitUntil(lambda: window.model_info is not None)
    with qtbot.waitSignal(controller.state_changed, check_params_cb=lambda s: s == SessionState.RUNNING):
        press(qtbot, parts, factory, START_STOP)
    assert window.start_button.text() == "Stop" and parts.tray.start_stop.text() == "Stop captions"
    with qtbot.waitSignal(controller.session_finished, timeout=10000):
        press(qtbot, parts, factory, START_STOP)
    assert controller.state == SessionState.IDLE and window.start_button.text() == "Start"


def test_without_global_shortcuts_the_hint_names_the_tray_and_the_window_shortcut(app, qtbot) -> None:
    parts, factory = app
    factory.fail_with = "Global shortcuts could not start (no X display); use the tray menu."
    parts.shortcuts.apply()
    parts.tray.click_through.trigger()
    assert parts.overlay.hint_text() == (
        f"Click-through on — turn it off from the tray menu or {CLICK_THROUGH_SHORTCUT}"
    )
    assert parts.window.click_through_shortcut is not None and parts.window.click_through_shortcut.isEnabled()


def test_the_window_shortcut_steps_aside_for_a_global_one_with_its_keys(app) -> None:
    """Both would fire on one press (pynput does not swallow the key) and undo each other."""
    parts, _ = app
    in_window = parts.window.click_through_shortcut
    assert in_window is not None and in_window.isEnabled()
    parts.settings.shortcuts.set_key(ShortcutAction.CLICK_THROUGH, "Shift+Ctrl+T")
    parts.shortcuts.apply()
    assert not in_window.isEnabled()
    parts.settings.shortcuts.set_key(ShortcutAction.CLICK_THROUGH, "Ctrl+Alt+Shift+T")
    parts.shortcuts.apply()
    assert in_window.isEnabled()


def test_saved_shortcuts_are_used_at_the_next_start(qtbot, fake_sd, monkeypatch) -> None:
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.delenv("XDG_SESSION_TYPE", raising=False)
    paths.settings_file().parent.mkdir(parents=True)
    saved = {"shortcuts": {"enabled": True, "start_stop": "", "click_through": "Meta+F9"}}
    paths.settings_file().write_text(json.dumps(saved))
    factory = FakeHotkeyFactory()
    parts = build_app(sd=fake_sd, model_loader=lambda path, backend: FakeModel(), shortcut_listener=factory)
    qtbot.addWidget(parts.window)
    qtbot.addWidget(parts.overlay)
    try:
        assert sorted(factory.listener.hotkeys) == sorted([to_pynput("Meta+F9"), SHOW_OVERLAY])
        parts.at_exit()  # at exit the listener stops
        assert factory.listener.stopped
    finally:
        parts.app.aboutToQuit.disconnect(parts.at_exit)
