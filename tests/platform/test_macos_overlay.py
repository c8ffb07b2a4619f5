"""macOS: the caption overlay's NSWindow flags, and the ScreenCaptureKit permission check, on a
real Mac with the normal Qt platform (cocoa; the offscreen platform has no NSWindow).

Skipped on every other OS. The hosted workflow (.github/workflows/platform-tests.yml) runs it on
a macOS runner, which has a window server but no one to answer a permission prompt, so the
permission test only reads the current state there.

Run it by hand on macOS (from a checkout; the engine is not needed)::

    python3.11 -m venv .venv && . .venv/bin/activate
    python -m pip install pyobjc-framework-Cocoa pyobjc-framework-Quartz numpy soxr sounddevice \\
        PySide6 platformdirs pyyaml pytest pytest-qt
    QT_QPA_PLATFORM=cocoa PYTHONPATH=app python -m pytest -m platform tests/platform/test_macos_overlay.py -v

Add ``CAPTIONIST_ASK_PERMISSION=1`` to see macOS's Screen & System Audio Recording prompt once
(the grant applies to the terminal app running the test, after it is restarted).
"""

from __future__ import annotations

import os
import sys

import pytest

pytestmark = [
    pytest.mark.platform,
    pytest.mark.skipif(sys.platform != "darwin", reason="NSWindow and ScreenCaptureKit exist only on macOS"),
]


def test_the_overlay_window_floats_over_full_screen_apps_on_every_space(qtbot) -> None:
    import AppKit
    import objc
    from PySide6.QtGui import QGuiApplication

    from captionist.settings import OverlaySettings
    from captionist.ui.overlay import CaptionOverlay
    from captionist.ui.overlay_macos import MacWindowFlags, overlay_collection_behavior

    if QGuiApplication.platformName() != "cocoa":
        pytest.skip(f"needs QT_QPA_PLATFORM=cocoa, not {QGuiApplication.platformName()}")
    overlay = CaptionOverlay(OverlaySettings())
    qtbot.addWidget(overlay)
    overlay.show()
    qtbot.waitExposed(overlay)
    assert overlay.pin_error is None
    assert isinstance(overlay.pin_result, MacWindowFlags)
    window = objc.objc_object(c_void_p=int(overlay.winId())).window()
    assert window is not None
    wanted = overlay_collection_behavior(AppKit)
    assert window.hidesOnDeactivate() is False or window.hidesOnDeactivate() == 0
    assert window.level() == AppKit.NSStatusWindowLevel
    assert window.collectionBehavior() & wanted == wanted
    overlay.set_click_through(True)  # Qt rebuilds the window flags: the pin must hold
    window = objc.objc_object(c_void_p=int(overlay.winId())).window()
    assert window.level() == AppKit.NSStatusWindowLevel
    assert not window.hidesOnDeactivate()


def test_screen_capture_permission_is_read_on_macos_13_and_later() -> None:
    from captionist.audio.screencapturekit_audio import (
        ScreenCapturePermission,
        macos_version,
        screen_capture_permission,
    )

    state = screen_capture_permission(request=os.environ.get("CAPTIONIST_ASK_PERMISSION") == "1")
    if macos_version() < (13, 0):
        assert state is ScreenCapturePermission.UNSUPPORTED
    else:  # a hosted runner is undecided or pre-granted; either is an answer, not UNSUPPORTED
        assert state in (ScreenCapturePermission.GRANTED, ScreenCapturePermission.NOT_GRANTED)
