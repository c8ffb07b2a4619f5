"""The overlay's platform pinning, against fakes: the NSWindow call sequence on macOS, the
SetWindowPos call on Windows, and that the overlay pins itself on every show (click-through
changes re-show it) without ever failing to show."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QWidget

from captionist.settings import OverlaySettings
from captionist.ui.overlay import CaptionOverlay
from captionist.ui.overlay_macos import MacOverlayUnavailable, MacWindowFlags, pin_macos_overlay
from captionist.ui.overlay_pin import overlay_pin_for_platform
from captionist.ui.overlay_windows import (
    HWND_TOPMOST,
    PIN_FLAGS,
    WindowsOverlayUnavailable,
    pin_windows_overlay,
)
from tests.fakes.fake_appkit import FakeAppKit, FakeObjc
from tests.fakes.fake_user32 import FakeUser32


@pytest.fixture
def widget(qtbot) -> QWidget:
    w = QWidget()
    qtbot.addWidget(w)
    w.show()
    return w


def test_macos_sets_the_three_flags_in_order_and_reads_them_back(widget: QWidget) -> None:
    objc, appkit = FakeObjc(), FakeAppKit()
    flags = pin_macos_overlay(widget, objc=objc, appkit=appkit)
    behavior = (1 << 0) | (1 << 8) | (1 << 4)  # CanJoinAllSpaces | FullScreenAuxiliary | Stationary
    assert objc.windows[0].calls == [
        ("setHidesOnDeactivate_", False),
        ("setLevel_", 25),  # NSStatusWindowLevel: above the floating level full-screen apps cover
        ("setCollectionBehavior_", behavior),
    ]
    assert flags == MacWindowFlags(hides_on_deactivate=False, level=25, collection_behavior=behavior)
    assert list(objc.views) == [int(widget.winId())]  # the NSView behind winId()


def test_macos_without_a_window_or_pyobjc_is_unavailable(widget: QWidget) -> None:
    with pytest.raises(MacOverlayUnavailable, match="not in a window"):
        pin_macos_overlay(widget, objc=FakeObjc(windowless=True), appkit=FakeAppKit())
    with pytest.raises(MacOverlayUnavailable, match="pyobjc"):
        pin_macos_overlay(widget)  # no AppKit on Linux


def test_windows_reasserts_topmost_without_moving_or_activating(widget: QWidget) -> None:
    user32 = FakeUser32()
    assert pin_windows_overlay(widget, user32=user32) is True
    assert user32.calls == [(int(widget.winId()), HWND_TOPMOST, 0, 0, 0, 0, PIN_FLAGS)]
    assert PIN_FLAGS == 0x0001 | 0x0002 | 0x0010 | 0x0040  # NOSIZE | NOMOVE | NOACTIVATE | SHOWWINDOW
    with pytest.raises(WindowsOverlayUnavailable, match="SetWindowPos"):
        pin_windows_overlay(widget, user32=FakeUser32(fail=True))


def test_the_platform_picks_its_pin() -> None:
    assert overlay_pin_for_platform("darwin") is pin_macos_overlay
    assert overlay_pin_for_platform("win32") is pin_windows_overlay
    assert overlay_pin_for_platform("linux") is None


def test_overlay_is_a_topmost_tool_window_pinned_on_every_show(qtbot) -> None:
    user32 = FakeUser32()
    ov = CaptionOverlay(OverlaySettings(), pin=lambda w: pin_windows_overlay(w, user32=user32))
    qtbot.addWidget(ov)
    flags = ov.windowFlags()
    assert flags & Qt.WindowType.WindowStaysOnTopHint and flags & Qt.WindowType.Tool
    assert ov.testAttribute(Qt.WidgetAttribute.WA_MacAlwaysShowToolWindow)
    assert user32.calls == []  # not before it is shown
    ov.show()
    assert len(user32.calls) == 1 and ov.pin_result is True and ov.pin_error is None
    ov.set_click_through(True)  # new window flags re-show the window: pinned again
    assert len(user32.calls) == 2
    assert user32.calls[-1][0] == int(ov.winId())


def test_overlay_on_macos_pins_the_nswindow(qtbot) -> None:
    objc = FakeObjc()
    ov = CaptionOverlay(OverlaySettings(), pin=lambda w: pin_macos_overlay(w, objc=objc, appkit=FakeAppKit()))
    qtbot.addWidget(ov)
    ov.show()
    assert isinstance(ov.pin_result, MacWindowFlags) and ov.pin_result.level == 25
    assert [name for name, _ in objc.windows[-1].calls][-3:] == [
        "setHidesOnDeactivate_",
        "setLevel_",
        "setCollectionBehavior_",
    ]


def test_a_failing_pin_still_shows_the_overlay_and_is_tried_once_more(qtbot) -> None:
    calls: list[int] = []

    def broken(_: QWidget) -> object:
        calls.append(1)
        raise MacOverlayUnavailable("pyobjc is unavailable (No module named 'AppKit')")

    ov = CaptionOverlay(OverlaySettings(), pin=broken)
    qtbot.addWidget(ov)
    ov.show()
    assert ov.isVisible() and ov.pin_result is None and "pyobjc" in (ov.pin_error or "")
    qtbot.waitUntil(lambda: len(calls) == 2)  # the retry on the next event-loop turn


def test_a_window_not_ready_at_show_is_pinned_on_the_next_turn(qtbot) -> None:
    objc = FakeObjc(windowless=True)  # the NSView is not in its NSWindow yet when showEvent runs

    ov = CaptionOverlay(OverlaySettings(), pin=lambda w: pin_macos_overlay(w, objc=objc, appkit=FakeAppKit()))
    qtbot.addWidget(ov)
    ov.show()
    assert "not in a window" in (ov.pin_error or "")
    objc.windowless = False
    objc.views.clear()  # the view is in a window now
    qtbot.waitUntil(lambda: isinstance(ov.pin_result, MacWindowFlags))
    assert ov.pin_error is None
