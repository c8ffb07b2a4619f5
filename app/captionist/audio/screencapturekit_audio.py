"""macOS system audio through ScreenCaptureKit: whether it can be used, the permission, the source.

Usage::

    state = screen_capture_permission()            # ScreenCapturePermission, never prompts
    state = screen_capture_permission(request=True)  # shows macOS's prompt once, if undecided
    sources = list_screencapturekit_sources()       # ["All apps (system audio)"] on macOS 13+
    note = macos_system_audio_note()                # the source panel's sentence about it

ScreenCaptureKit (macOS 13+) delivers the computer's audio without a virtual device, but only to
an app the user has allowed under System Settings > Privacy & Security > Screen & System Audio
Recording. macOS asks the first time the app captures (or on ``request=True``); a grant takes
effect after Captionist restarts, and opening the source before that fails with a message that
says so. The source is one ``loopback`` source, "All apps", opened by
``screencapturekit_stream.ScreenCaptureKitInputStream``. Without macOS 13 or without pyobjc's
ScreenCaptureKit wrapper it is not listed and the note names BlackHole instead.

pyobjc's ``Quartz`` (permission) and the availability check are injected, so all of this is
testable on any OS.
"""

from __future__ import annotations

import platform
import sys
from collections.abc import Callable
from enum import Enum
from typing import Any

from captionist.audio.devices import Source, SourceBackend

MIN_MACOS = (13, 0)
SOURCE_ID = "screencapturekit:all-apps"
SOURCE_NAME = "All apps"
SAMPLE_RATE = 48000
CHANNELS = 2
BLACKHOLE_NOTE = (
    "macOS does not expose system audio directly: install a virtual device such as "
    "BlackHole and select it (or an aggregate device that includes it)."
)
SCREENCAPTUREKIT_NOTE = (
    "System audio: choose 'All apps (system audio)'. The first time, macOS asks to allow Captionist "
    "under Screen & System Audio Recording (System Settings > Privacy & Security); allow it, then "
    "restart Captionist. A virtual device such as BlackHole works too."
)


class ScreenCapturePermission(Enum):
    GRANTED = "granted"
    NOT_GRANTED = "not-granted"  # undecided or refused; only System Settings can change a refusal
    UNSUPPORTED = "unsupported"  # not macOS 13+, or pyobjc's Quartz is missing


def macos_version(release: str | None = None) -> tuple[int, int]:
    """(major, minor) of ``platform.mac_ver()``, (0, 0) when unknown or not macOS."""
    text = release if release is not None else platform.mac_ver()[0]
    parts = [int(p) for p in text.split(".")[:2] if p.isdigit()]
    return (parts + [0, 0])[0], (parts + [0, 0])[1]


def import_quartz() -> Any:
    """pyobjc's Quartz module, or None when it cannot be imported."""
    try:
        import Quartz
    except Exception:  # ImportError off macOS or without pyobjc
        return None
    return Quartz


def screen_capture_permission(
    request: bool = False,
    *,
    quartz: Any = None,
    os_platform: str = sys.platform,
    release: str | None = None,
) -> ScreenCapturePermission:
    """Whether this process may capture the screen and system audio.

    ``request=True`` shows macOS's permission prompt if the user has not decided yet (it returns
    at once; a grant takes effect after a restart)."""
    if os_platform != "darwin" or macos_version(release) < MIN_MACOS:
        return ScreenCapturePermission.UNSUPPORTED
    quartz = quartz or import_quartz()
    if quartz is None:
        return ScreenCapturePermission.UNSUPPORTED
    if quartz.CGPreflightScreenCaptureAccess():
        return ScreenCapturePermission.GRANTED
    if request and quartz.CGRequestScreenCaptureAccess():
        return ScreenCapturePermission.GRANTED
    return ScreenCapturePermission.NOT_GRANTED


def screencapturekit_available(os_platform: str = sys.platform, release: str | None = None) -> bool:
    """macOS 13+ with pyobjc's ScreenCaptureKit wrapper importable."""
    if os_platform != "darwin" or macos_version(release) < MIN_MACOS:
        return False
    try:
        import ScreenCaptureKit  # noqa: F401
    except Exception:  # missing wrapper, or the framework failed to load
        return False
    return True


def list_screencapturekit_sources(available: Callable[[], bool] = screencapturekit_available) -> list[Source]:
    """The "All apps" system-audio source where ScreenCaptureKit can be used, else none."""
    if not available():
        return []
    return [
        Source(
            id=SOURCE_ID,
            name=SOURCE_NAME,
            kind="loopback",
            hostapi="ScreenCaptureKit",
            channels=CHANNELS,
            samplerate=float(SAMPLE_RATE),
            backend=SourceBackend.SCREENCAPTUREKIT,
        )
    ]


def macos_system_audio_note(available: Callable[[], bool] = screencapturekit_available) -> str:
    """What the source panel says about system audio on this Mac."""
    return SCREENCAPTUREKIT_NOTE if available() else BLACKHOLE_NOTE
