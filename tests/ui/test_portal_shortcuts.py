"""The desktop portal's global shortcuts over real D-Bus: a private dbus-daemon and a fake portal on it
(tests/fakes/fake_portal.py) that answers as xdg-desktop-portal does."""

from __future__ import annotations

import threading
import time

import pytest

from captionist.ui.global_shortcuts import ShortcutsUnavailable
from captionist.ui.portal_shortcuts import (
    NO_BUS_NOTE,
    NO_PORTAL_NOTE,
    BindOutcome,
    PortalBinding,
    PortalShortcut,
    start_portal_shortcuts,
)
from tests.fakes.fake_portal import FakePortal, PrivateBus

SHORTCUTS = {
    "start_stop": PortalShortcut("Start/stop captions", "CTRL+ALT+SHIFT+s"),
    "click_through": PortalShortcut("Click-through on/off", None),
}


class Recorder:
    def __init__(self) -> None:
        self.activated: list[tuple[str, threading.Thread]] = []
        self.bindings: list[PortalBinding] = []

    def on_activated(self, shortcut_id: str) -> None:
        self.activated.append((shortcut_id, threading.current_thread()))

    def on_binding(self, binding: PortalBinding) -> None:
        self.bindings.append(binding)


def start(bus: PrivateBus, recorder: Recorder, shortcuts=SHORTCUTS):
    return start_portal_shortcuts(shortcuts, recorder.on_activated, recorder.on_binding, bus=bus.address)


def test_binds_each_shortcut_with_its_description_and_suggested_keys(bus, portal) -> None:
    portal.triggers = {"start_stop": "Ctrl+Alt+Shift+S", "click_through": "Super+F9"}
    recorder = Recorder()
    listener = start(bus, recorder)
    try:
        portal.wait_for(lambda: recorder.bindings)
        session, shortcuts = portal.bound[0]
        assert session == portal.sessions[0]
        assert shortcuts == [
            ("start_stop", {"description": "Start/stop captions", "preferred_trigger": "CTRL+ALT+SHIFT+s"}),
            ("click_through", {"description": "Click-through on/off"}),  # no trigger to suggest
        ]
        assert recorder.bindings == [
            PortalBinding(BindOutcome.BOUND, {"start_stop": "Ctrl+Alt+Shift+S", "click_through": "Super+F9"})
        ]
    finally:
        listener.stop()


def test_a_press_arrives_on_the_listener_thread_and_other_sessions_are_ignored(bus, portal) -> None:
    recorder = Recorder()
    listener = start(bus, recorder)
    try:
        portal.wait_for(lambda: recorder.bindings)
        portal.activate("click_through", session="/org/freedesktop/portal/desktop/session/other/app")
        portal.activate("not_ours")  # an id this app never bound
        portal.activate("start_stop")
        portal.wait_for(lambda: recorder.activated)
        time.sleep(0.3)  # nothing else may follow
        assert [shortcut_id for shortcut_id, _ in recorder.activated] == ["start_stop"]
        assert recorder.activated[0][1] is not threading.main_thread()
    finally:
        listener.stop()


def test_stop_closes_the_session_and_returns_promptly(bus, portal) -> None:
    recorder = Recorder()
    listener = start(bus, recorder)
    portal.wait_for(lambda: recorder.bindings)
    began = time.monotonic()
    listener.stop()
    assert time.monotonic() - began < 2.0  # the thread looks every 0.2 s
    portal.wait_for(lambda: portal.closed)
    assert portal.closed == portal.sessions
    portal.activate("start_stop")
    time.sleep(0.3)
    assert recorder.activated == []


def test_keys_changed_in_the_desktops_settings_are_reported(bus, portal) -> None:
    recorder = Recorder()
    listener = start(bus, recorder)
    try:
        portal.wait_for(lambda: recorder.bindings)
        portal.change_triggers({"start_stop": "Super+S"})
        portal.wait_for(lambda: len(recorder.bindings) == 2)
        assert recorder.bindings[1] == PortalBinding(BindOutcome.BOUND, {"start_stop": "Super+S"})
    finally:
        listener.stop()


@pytest.mark.parametrize("response, outcome", [(1, BindOutcome.DECLINED), (2, BindOutcome.FAILED)])
def test_a_refusal_is_reported_and_nothing_is_listened_to(bus, portal, response, outcome) -> None:
    portal.bind_response = response
    recorder = Recorder()
    listener = start(bus, recorder)
    try:
        portal.wait_for(lambda: recorder.bindings)
        assert [b.outcome for b in recorder.bindings] == [outcome]
        portal.wait_for(lambda: portal.closed)  # the thread ended and closed its session
        portal.activate("start_stop")
        time.sleep(0.3)
        assert recorder.activated == []
    finally:
        listener.stop()


def test_a_bus_without_the_portal_says_so_at_once(bus) -> None:
    with pytest.raises(ShortcutsUnavailable) as raised:
        start(bus, Recorder())
    assert str(raised.value) == NO_PORTAL_NOTE


def test_a_portal_without_global_shortcuts_says_so(bus) -> None:
    class OldPortal(FakePortal):  # an xdg-desktop-portal older than GlobalShortcuts (1.16)
        def _answer(self, conn, call):
            from jeepney import new_error

            conn.send(new_error(call, "org.freedesktop.DBus.Error.UnknownInterface"))

    with OldPortal(bus.address), pytest.raises(ShortcutsUnavailable) as raised:
        start(bus, Recorder())
    assert str(raised.value) == NO_PORTAL_NOTE


def test_no_session_bus_says_so() -> None:
    with pytest.raises(ShortcutsUnavailable) as raised:
        start_portal_shortcuts(SHORTCUTS, print, print, bus="unix:path=/nonexistent/captionist-test-bus")
    assert str(raised.value) == NO_BUS_NOTE


def test_the_bus_going_away_mid_session_is_a_failed_binding() -> None:
    recorder = Recorder()
    with PrivateBus() as bus:
        with FakePortal(bus.address) as portal:
            listener = start(bus, recorder)
            portal.wait_for(lambda: recorder.bindings)
    # the daemon is gone: the listener's next read fails, on its thread, and says so
    deadline = time.monotonic() + 5
    while len(recorder.bindings) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    listener.stop()
    assert recorder.bindings[0].outcome is BindOutcome.BOUND
    assert recorder.bindings[1].outcome is BindOutcome.FAILED and recorder.bindings[1].detail


def test_a_press_right_after_the_binding_is_announced_is_not_missed(bus, portal) -> None:
    """The listener subscribed to presses only after announcing the binding, so a press in between
    was lost (a CI run under load missed one); it is subscribed before it creates the session."""
    recorder = Recorder()

    def press_at_once(binding: PortalBinding) -> None:  # on the listener's thread, before it listens
        recorder.on_binding(binding)
        sent = portal.signals_sent
        portal.activate("start_stop")
        portal.wait_for(lambda: portal.signals_sent > sent)  # sent before the listener goes on

    listener = start_portal_shortcuts(SHORTCUTS, recorder.on_activated, press_at_once, bus=bus.address)
    try:
        portal.wait_for(lambda: recorder.activated)
        assert [shortcut for shortcut, _ in recorder.activated] == ["start_stop"]
    finally:
        listener.stop()
