"""macOS: the caption overlay's NSWindow flags, and system audio through ScreenCaptureKit (the
permission check, the "All apps" source, and a capture where the permission is granted), on a
real Mac with the normal Qt platform (cocoa; the offscreen platform has no NSWindow).

Skipped on every other OS. The hosted workflow (.github/workflows/platform-tests.yml) runs it on
a macOS runner, which has a window server but no one to answer a permission prompt: there the
permission is only read, and opening the source must fail with a message naming the permission
(or, where the runner image has granted it, capture audio).

Run it by hand on macOS (from a checkout; the engine is not needed)::

    python3.11 -m venv .venv && . .venv/bin/activate
    python -m pip install pyobjc-framework-Cocoa pyobjc-framework-Quartz pyobjc-framework-ScreenCaptureKit \\
        numpy soxr soundfile sounddevice PySide6 platformdirs pyyaml pytest pytest-qt
    QT_QPA_PLATFORM=cocoa PYTHONPATH=app python -m pytest -m platform tests/platform/test_macos.py -v

Add ``CAPTIONIST_ASK_PERMISSION=1`` to see macOS's Screen & System Audio Recording prompt once
(the grant applies to the terminal app running the test, after it is restarted); once granted,
the capture test plays a tone with ``afplay`` and expects to hear it through "All apps".
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
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
    with qtbot.waitExposed(overlay):  # a context manager: it waits for what its block does
        overlay.show()
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


def test_all_apps_is_listed_and_opens_or_says_which_permission_it_needs(tmp_path: Path) -> None:
    import sounddevice
    import soundfile

    from captionist.audio.capture import Capture, CaptureError, rms_dbfs
    from captionist.audio.screencapturekit_audio import (
        ScreenCapturePermission,
        list_screencapturekit_sources,
        macos_version,
        screen_capture_permission,
    )

    if macos_version() < (13, 0):
        assert list_screencapturekit_sources() == []
        pytest.skip("ScreenCaptureKit audio needs macOS 13")
    (source,) = list_screencapturekit_sources()
    assert source.label() == "All apps (system audio)"
    cap = Capture([source], sd=sounddevice)
    if screen_capture_permission() is not ScreenCapturePermission.GRANTED:
        with pytest.raises(
            CaptureError, match="Screen & System Audio Recording|did not answer|did not start"
        ):
            cap.start()
        pytest.skip("Screen & System Audio Recording is not granted here: stopped at the permission")
    cap.start()
    rate = 48000
    t = np.arange(int(rate * 1.5)) / rate
    wav = tmp_path / "tone.wav"
    soundfile.write(wav, (0.3 * np.sin(2 * np.pi * 440.0 * t)).astype(np.float32), rate)
    player = subprocess.Popen(["afplay", str(wav)])
    chunks = []
    deadline = time.monotonic() + 2.5
    while time.monotonic() < deadline:
        pcm = cap.read(timeout=0.1)
        if pcm is not None:
            chunks.append(pcm)
    player.wait(10)
    cap.stop()
    while (pcm := cap.read(0)) is not None:
        chunks.append(pcm)
    captured = np.concatenate(chunks) if chunks else np.zeros(0, np.float32)
    assert captured.size >= 16000, f"only {captured.size / 16000:.2f} s captured"
    loudest = max(rms_dbfs(captured[i : i + 16000]) for i in range(0, captured.size - 15999, 1600))
    assert loudest > -50.0, f"loudest 1 s of 'All apps' is {loudest:.1f} dBFS"
