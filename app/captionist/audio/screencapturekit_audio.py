"""macOS system audio through ScreenCaptureKit: the permission check now, the capture not yet.

Usage::

    state = screen_capture_permission()            # ScreenCapturePermission, never prompts
    state = screen_capture_permission(request=True)  # shows macOS's prompt once, if undecided
    sources = list_screencapturekit_sources()       # [] for now: see below

ScreenCaptureKit (macOS 13+) can deliver the computer's audio without a virtual device, but only
to an app the user has allowed under System Settings > Privacy & Security > Screen & System Audio
Recording; macOS asks once (``CGRequestScreenCaptureAccess``) and the app must be restarted after
the user allows it. The check lives here, behind an injected ``quartz`` module (pyobjc's
``Quartz``), so it is testable on any OS.

Not yet: an audio-only ``SCStream`` source (an ``SCContentFilter`` on the main display with
``capturesAudio`` set and ``excludesCurrentProcessAudio``, its ``CMSampleBuffer``s copied into
the capture queue). Until it exists ``list_screencapturekit_sources`` returns no sources and the
UI names BlackHole as the way to capture system audio on macOS (``SCREENCAPTUREKIT_NOTE``).
"""

from __future__ import annotations

import platform
import sys
from enum import Enum
from typing import Any

from captionist.audio.devices import Source

MIN_MACOS = (13, 0)
SCREENCAPTUREKIT_NOTE = (
    "Direct capture through ScreenCaptureKit (which asks for the Screen & System Audio Recording "
    "permission) is not available in this version yet."
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


def list_screencapturekit_sources() -> list[Source]:
    """System-audio sources through ScreenCaptureKit: none yet (see the module docstring)."""
    return []
