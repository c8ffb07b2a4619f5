"""Which platform call keeps the caption overlay on top each time it is shown.

Usage::

    pin = overlay_pin_for_platform()    # None where Qt's flags are enough (X11, Wayland)
    if pin is not None:
        result = pin(overlay)           # MacWindowFlags on macOS, bool (topmost) on Windows

macOS: ``overlay_macos.pin_macos_overlay`` (stay visible in the background, on every Space and
over full-screen apps). Windows: ``overlay_windows.pin_windows_overlay`` (``SetWindowPos
(HWND_TOPMOST)`` over borderless full-screen windows). Both import their libraries only when called.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from PySide6.QtWidgets import QWidget

OverlayPin = Callable[[QWidget], object]


def overlay_pin_for_platform(platform: str = sys.platform) -> OverlayPin | None:
    if platform == "darwin":
        from captionist.ui.overlay_macos import pin_macos_overlay

        return pin_macos_overlay
    if platform == "win32":
        from captionist.ui.overlay_windows import pin_windows_overlay

        return pin_windows_overlay
    return None
