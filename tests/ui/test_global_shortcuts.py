"""GlobalShortcuts: which keys the listener gets, presses handed to the GUI thread, and every reason
the shortcuts are off said in one sentence, never an exception."""

from __future__ import annotations

import threading

import pytest
from PySide6.QtCore import Qt

from captionist.settings import ShortcutSettings
from captionist.shortcut_keys import ShortcutAction
from captionist.ui.global_shortcuts import (
    ACTIVE_NOTE,
    WAYLAND_NOTE,
    GlobalShortcuts,
    ShortcutState,
    wayland_session,
)
from tests.fakes.fake_hotkeys import FakeHotkeyFactory

X11 = {"DISPLAY": ":0"}


@pytest.fixture
def factory() -> FakeHotkeyFactory:
    return FakeHotkeyFactory()


def make(factory: FakeHotkeyFactory, settings: ShortcutSettings | None = None, **kwargs) -> GlobalShortcuts:
    kwargs.setdefault("platform_name", "xcb")
    kwargs.setdefault("environ", X11)
    kwargs.setdefault("mac", False)
    return GlobalShortcuts(settings or ShortcutSettings(), factory, **kwargs)


def test_the_listener_gets_every_action_in_pynput_format(factory: FakeHotkeyFactory) -> None:
    shortcuts = make(factory)
    shortcuts.apply()
    assert shortcuts.state is ShortcutState.ACTIVE and shortcuts.note() == ACTIVE_NOTE
    assert sorted(factory.listener.hotkeys) == [
        "<ctrl>+<alt>+<shift>+o",
        "<ctrl>+<alt>+<shift>+s",
        "<ctrl>+<alt>+<shift>+t",
    ]
    assert shortcuts.active_keys() == {
        ShortcutAction.START_STOP: "Ctrl+Alt+Shift+S",
        ShortcutAction.SHOW_OVERLAY: "Ctrl+Alt+Shift+O",
        ShortcutAction.CLICK_THROUGH: "Ctrl+Alt+Shift+T",
    }


def test_on_macos_qt_ctrl_becomes_command(factory: FakeHotkeyFactory) -> None:
    make(factory, platform_name="cocoa", environ={}, mac=True).apply()
    assert "<alt>+<shift>+<cmd>+t" in factory.listener.hotkeys


def test_a_press_on_the_listener_thread_is_delivered_in_the_gui_thread(qtbot, factory) -> None:
    shortcuts = make(factory)
    shortcuts.apply()
    seen: list[tuple[ShortcutAction, threading.Thread]] = []
    # Direct: the recorder runs in whichever thread emits (a plain lambda PySide6 may queue to the GUI thread)
    shortcuts.triggered.connect(
        lambda action: seen.append((action, threading.current_thread())), Qt.ConnectionType.DirectConnection
    )
    with qtbot.waitSignal(shortcuts.triggered) as blocker:
        factory.listener.press("<ctrl>+<alt>+<shift>+t")
        assert seen == []  # the callback has returned on its thread; Qt has only queued the call
    assert blocker.args == [ShortcutAction.CLICK_THROUGH]
    assert seen == [(ShortcutAction.CLICK_THROUGH, threading.main_thread())]
    assert factory.listener.callback_threads[0] is not threading.main_thread()


def test_apply_restarts_the_listener_with_the_new_keys(qtbot, factory) -> None:
    settings = ShortcutSettings()
    shortcuts = make(factory, settings)
    shortcuts.apply()
    first = factory.listener
    settings.set_key(ShortcutAction.CLICK_THROUGH, "Meta+F9")
    settings.set_key(ShortcutAction.START_STOP, "")  # no shortcut for it
    with qtbot.waitSignal(shortcuts.state_changed):
        shortcuts.apply()
    assert first.stopped and factory.listener is not first and not factory.listener.stopped
    assert sorted(factory.listener.hotkeys) == ["<cmd>+<f9>", "<ctrl>+<alt>+<shift>+o"]
    assert ShortcutAction.START_STOP not in shortcuts.active_keys()


def test_a_press_queued_by_a_stopped_listener_is_dropped(qtbot, factory) -> None:
    shortcuts = make(factory)
    shortcuts.apply()
    old = factory.listener
    seen: list[ShortcutAction] = []
    shortcuts.triggered.connect(seen.append)
    old.press("<ctrl>+<alt>+<shift>+t")  # queued, not yet delivered ...
    shortcuts.apply()  # ... when the listener is replaced
    with qtbot.waitSignal(shortcuts.triggered):  # a press on the new one arrives after the old one
        factory.listener.press("<ctrl>+<alt>+<shift>+o")
    assert seen == [ShortcutAction.SHOW_OVERLAY]


def test_turned_off_nothing_listens(qtbot, factory) -> None:
    settings = ShortcutSettings(enabled=False)
    shortcuts = make(factory, settings)
    shortcuts.apply()
    assert factory.started == [] and shortcuts.state is ShortcutState.OFF
    assert shortcuts.note() == "Global shortcuts are off." and shortcuts.active_keys() == {}
    settings.enabled = True
    shortcuts.apply()
    assert shortcuts.state is ShortcutState.ACTIVE and len(factory.started) == 1
    settings.enabled = False
    shortcuts.apply()
    assert factory.listener.stopped and shortcuts.state is ShortcutState.OFF


def test_no_action_with_a_shortcut_starts_no_listener(factory) -> None:
    settings = ShortcutSettings(start_stop="", show_overlay="", click_through="")
    shortcuts = make(factory, settings)
    shortcuts.apply()
    assert factory.started == [] and shortcuts.state is ShortcutState.OFF
    assert shortcuts.note() == "No action has a global shortcut."


@pytest.mark.parametrize(
    ("platform_name", "environ"),
    [
        ("wayland", {"WAYLAND_DISPLAY": "wayland-0", "DISPLAY": ":0"}),
        ("offscreen", {"WAYLAND_DISPLAY": "wayland-0"}),
        ("xcb", {"XDG_SESSION_TYPE": "wayland", "DISPLAY": ":0", "WAYLAND_DISPLAY": "wayland-0"}),
    ],
)
def test_on_wayland_without_a_portal_client_shortcuts_are_off(factory, platform_name, environ) -> None:
    shortcuts = make(factory, platform_name=platform_name, environ=environ)
    shortcuts.apply()
    assert factory.started == [] and shortcuts.state is ShortcutState.UNAVAILABLE
    assert (
        shortcuts.note()
        == WAYLAND_NOTE
        == "Global shortcuts need the desktop's shortcuts portal on Wayland; use the tray menu."
    )


def test_wayland_detection() -> None:
    assert wayland_session("wayland", {})
    assert wayland_session("xcb", {"XDG_SESSION_TYPE": "Wayland", "DISPLAY": ":1"})
    assert wayland_session("offscreen", {"WAYLAND_DISPLAY": "wayland-0"})
    assert not wayland_session("xcb", {"WAYLAND_DISPLAY": "wayland-0", "DISPLAY": ":1"})  # X11 apps there
    assert not wayland_session("xcb", {"DISPLAY": ":0", "XDG_SESSION_TYPE": "x11"})
    assert not wayland_session("windows", {})
    assert not wayland_session("cocoa", {})


def test_a_listener_that_cannot_start_leaves_them_off_with_its_reason(factory) -> None:
    factory.fail_with = "Global shortcuts could not start (no X display); use the tray menu."
    shortcuts = make(factory)
    shortcuts.apply()
    assert shortcuts.state is ShortcutState.UNAVAILABLE and shortcuts.active_keys() == {}
    assert shortcuts.note() == factory.fail_with
    factory.fail_with = None  # e.g. after a permission was given: the next apply tries again
    shortcuts.apply()
    assert shortcuts.state is ShortcutState.ACTIVE


def test_any_other_listener_error_is_reported_not_raised(factory) -> None:
    factory.crash_with = RuntimeError("record extension is busy")
    shortcuts = make(factory)
    shortcuts.apply()
    assert shortcuts.state is ShortcutState.UNAVAILABLE
    assert (
        shortcuts.note() == "Global shortcuts could not start (record extension is busy); use the tray menu."
    )


def test_clashing_or_unusable_keys_are_refused_with_the_reason(factory) -> None:
    clash = ShortcutSettings(start_stop="Ctrl+Alt+K", show_overlay="Ctrl+Alt+Shift+K")
    shortcuts = make(factory, clash)
    shortcuts.apply()
    assert factory.started == [] and shortcuts.state is ShortcutState.REFUSED
    assert shortcuts.note() == (
        "Global shortcuts are off: Ctrl+Alt+Shift+K (Show/hide captions) would also fire "
        "Ctrl+Alt+K (Start/stop captions)."
    )
    bad = make(factory, ShortcutSettings(click_through="Ctrl+A, Ctrl+B"))
    bad.apply()
    assert bad.state is ShortcutState.REFUSED and "one key combination only" in bad.note()


def test_stop_stops_the_listener_and_later_presses_are_dropped(qtbot, factory) -> None:
    shortcuts = make(factory)
    shortcuts.apply()
    seen: list[ShortcutAction] = []
    shortcuts.triggered.connect(seen.append)
    with qtbot.waitSignal(shortcuts.state_changed):
        shortcuts.stop()
    assert factory.listener.stopped and shortcuts.state is ShortcutState.OFF and shortcuts.active_keys() == {}
    factory.listener.press("<ctrl>+<alt>+<shift>+t")
    shortcuts.apply()  # a new listener: its press is delivered, the stopped one's was not
    with qtbot.waitSignal(shortcuts.triggered):
        factory.listener.press("<ctrl>+<alt>+<shift>+s")
    assert seen == [ShortcutAction.START_STOP]
