"""GlobalShortcuts on Wayland: the keys are asked of the desktop's portal (a fake one on a private
dbus-daemon, tests/fakes/fake_portal.py), the state follows the desktop's answer, and a press comes to
the GUI thread as the action it was bound for."""

from __future__ import annotations

import threading

from PySide6.QtCore import Qt

from captionist.settings import ShortcutSettings
from captionist.shortcut_keys import ShortcutAction
from captionist.ui.global_shortcuts import (
    PORTAL_DECLINED_NOTE,
    PORTAL_PENDING_NOTE,
    GlobalShortcuts,
    ShortcutState,
)
from captionist.ui.portal_shortcuts import NO_PORTAL_NOTE, start_portal_shortcuts
from tests.fakes.fake_hotkeys import FakeHotkeyFactory
from tests.fakes.fake_portal import PrivateBus

WAYLAND = {"WAYLAND_DISPLAY": "wayland-0", "XDG_SESSION_TYPE": "wayland"}


def make(bus: PrivateBus, keyboard: FakeHotkeyFactory, settings: ShortcutSettings | None = None):
    def start_portal(shortcuts, on_activated, on_binding):
        return start_portal_shortcuts(shortcuts, on_activated, on_binding, bus=bus.address)

    shortcuts = GlobalShortcuts(
        settings or ShortcutSettings(),
        keyboard,
        platform_name="wayland",
        environ=WAYLAND,
        mac=False,
        start_portal=start_portal,
    )
    return shortcuts


def test_the_desktop_is_asked_and_its_keys_are_shown(qtbot, bus, portal) -> None:
    portal.triggers = {
        "start_stop": "Ctrl+Alt+Shift+S",
        "show_overlay": "Super+O",
        "click_through": "Super+T",
    }
    keyboard = FakeHotkeyFactory()
    shortcuts = make(bus, keyboard)
    with qtbot.waitSignals([shortcuts.state_changed, shortcuts.state_changed], timeout=10_000):
        shortcuts.apply()
        assert shortcuts.state is ShortcutState.PENDING and shortcuts.note() == PORTAL_PENDING_NOTE
        assert shortcuts.active_keys() == {}
    try:
        assert keyboard.started == []  # no X11 listener on Wayland
        assert shortcuts.state is ShortcutState.ACTIVE
        assert shortcuts.active_keys() == {
            ShortcutAction.START_STOP: "Ctrl+Alt+Shift+S",
            ShortcutAction.SHOW_OVERLAY: "Super+O",  # the desktop chose other keys than suggested
            ShortcutAction.CLICK_THROUGH: "Super+T",
        }
        assert "Click-through on/off: Super+T" in shortcuts.note()
        suggested = dict(portal.bound[0][1])
        assert suggested["click_through"] == {
            "description": "Click-through on/off",
            "preferred_trigger": "CTRL+ALT+SHIFT+t",
        }
    finally:
        shortcuts.stop()


def test_a_press_reaches_the_gui_thread_as_its_action(qtbot, bus, portal) -> None:
    shortcuts = make(bus, FakeHotkeyFactory())
    with qtbot.waitSignals([shortcuts.state_changed, shortcuts.state_changed], timeout=10_000):
        shortcuts.apply()
    seen: list[tuple[ShortcutAction, threading.Thread]] = []
    shortcuts.triggered.connect(
        lambda action: seen.append((action, threading.current_thread())), Qt.ConnectionType.DirectConnection
    )
    try:
        with qtbot.waitSignal(shortcuts.triggered, timeout=10_000) as blocker:
            portal.activate("show_overlay")
        assert blocker.args == [ShortcutAction.SHOW_OVERLAY]
        assert seen == [(ShortcutAction.SHOW_OVERLAY, threading.main_thread())]
    finally:
        shortcuts.stop()


def test_a_portal_that_lists_nothing_bound_everything_with_the_suggested_keys(qtbot, bus, portal) -> None:
    portal.list_bound = False
    shortcuts = make(bus, FakeHotkeyFactory())
    with qtbot.waitSignals([shortcuts.state_changed, shortcuts.state_changed], timeout=10_000):
        shortcuts.apply()
    try:
        assert shortcuts.state is ShortcutState.ACTIVE
        assert shortcuts.active_keys() == ShortcutSettings().keys()
    finally:
        shortcuts.stop()


def test_a_declined_dialog_turns_the_shortcuts_off_and_says_how_to_ask_again(qtbot, bus, portal) -> None:
    portal.bind_response = 1
    shortcuts = make(bus, FakeHotkeyFactory())
    with qtbot.waitSignals([shortcuts.state_changed, shortcuts.state_changed], timeout=10_000):
        shortcuts.apply()
    assert shortcuts.state is ShortcutState.UNAVAILABLE and shortcuts.note() == PORTAL_DECLINED_NOTE
    assert shortcuts.active_keys() == {}
    portal.wait_for(lambda: portal.closed == portal.sessions)


def test_without_a_portal_the_note_says_why(qtbot, bus) -> None:
    shortcuts = make(bus, FakeHotkeyFactory())
    shortcuts.apply()
    assert shortcuts.state is ShortcutState.UNAVAILABLE and shortcuts.note() == NO_PORTAL_NOTE


def test_new_keys_start_a_new_session_and_the_old_one_is_deaf(qtbot, bus, portal) -> None:
    settings = ShortcutSettings()
    shortcuts = make(bus, FakeHotkeyFactory(), settings)
    with qtbot.waitSignals([shortcuts.state_changed, shortcuts.state_changed], timeout=10_000):
        shortcuts.apply()
    first = portal.sessions[0]
    settings.set_key(ShortcutAction.CLICK_THROUGH, "Meta+F9")
    with qtbot.waitSignals([shortcuts.state_changed, shortcuts.state_changed], timeout=10_000):
        shortcuts.apply()
    try:
        assert portal.closed == [first] and len(portal.sessions) == 2
        assert dict(portal.bound[1][1])["click_through"]["preferred_trigger"] == "LOGO+F9"
        seen: list[ShortcutAction] = []
        shortcuts.triggered.connect(seen.append)
        portal.activate("start_stop", session=first)
        with qtbot.waitSignal(shortcuts.triggered, timeout=10_000):
            portal.activate("click_through")
        assert seen == [ShortcutAction.CLICK_THROUGH]
    finally:
        shortcuts.stop()
