"""The app on a Wayland desktop: its global shortcuts come from the desktop's portal (a fake one on a
private dbus-daemon), a press there toggles click-through, and the overlay's hint names the keys the
desktop chose, not the ones Captionist suggested."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from captionist import paths
from captionist.shortcut_keys import ShortcutAction
from captionist.ui.app import AppParts, build_app
from captionist.ui.global_shortcuts import ShortcutState
from captionist.ui.portal_shortcuts import start_portal_shortcuts
from tests.fakes.fake_engine import FakeModel
from tests.fakes.fake_hotkeys import FakeHotkeyFactory
from tests.fakes.fake_portal import FakePortal, PrivateBus


@pytest.fixture
def app(
    qtbot, fake_sd, monkeypatch, bus: PrivateBus, portal: FakePortal
) -> Iterator[tuple[AppParts, FakePortal, FakeHotkeyFactory]]:
    monkeypatch.setenv("XDG_SESSION_TYPE", "wayland")
    monkeypatch.setenv("WAYLAND_DISPLAY", "wayland-0")
    fake_sd.add_device("Mic", rate=16000, default=True)
    (paths.models_dir() / "m.gguf").parent.mkdir(parents=True)
    (paths.models_dir() / "m.gguf").write_bytes(b"GGUF")
    keyboard = FakeHotkeyFactory()
    portal.triggers = {"click_through": "Super+T"}  # the desktop chose other keys for it

    def portal_listener(shortcuts, on_activated, on_binding):
        return start_portal_shortcuts(shortcuts, on_activated, on_binding, bus=bus.address)

    parts = build_app(
        sd=fake_sd,
        model_loader=lambda path, backend: FakeModel(),
        shortcut_listener=keyboard,
        portal_listener=portal_listener,
    )
    qtbot.addWidget(parts.window)
    qtbot.addWidget(parts.overlay)
    try:
        qtbot.waitUntil(lambda: parts.shortcuts.state is ShortcutState.ACTIVE, timeout=10_000)
        yield parts, portal, keyboard
    finally:
        parts.app.aboutToQuit.disconnect(parts.at_exit)
        parts.save_timer.stop()
        parts.controller.shutdown()
        parts.shortcuts.stop()


def test_a_press_through_the_portal_toggles_click_through_and_the_hint_names_the_desktops_keys(
    app, qtbot
) -> None:
    parts, portal, keyboard = app
    assert keyboard.started == []  # no X11 keyboard listener on Wayland
    with qtbot.waitSignal(parts.shortcuts.triggered, timeout=10_000):
        portal.activate("click_through")
    assert parts.overlay.is_click_through()
    assert parts.overlay.hint_text() == "Click-through on — press Super+T to turn it off"
    assert parts.shortcuts.active_keys()[ShortcutAction.START_STOP] == "Ctrl+Alt+Shift+S"  # as suggested
