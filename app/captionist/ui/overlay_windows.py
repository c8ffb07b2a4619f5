"""Windows: re-assert the caption overlay as a topmost window, so it stays over borderless
full-screen windows (games, video players, slideshows).

Usage::

    topmost = pin_windows_overlay(overlay)   # after the overlay is shown; True if WS_EX_TOPMOST

Qt's ``WindowStaysOnTopHint`` makes the window topmost when it is created, but another topmost
window (a borderless full-screen app) shown later covers it. ``SetWindowPos(HWND_TOPMOST)``
without moving, resizing or activating puts it back on top of the topmost band; the extended style
is read back to report the result.

``user32`` is loaded lazily through ctypes and injectable (any object with ``SetWindowPos`` and
``GetWindowLongW``), so the call is tested on any OS. GUI thread only.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QWidget

HWND_TOPMOST = -1
SWP_NOSIZE = 0x0001
SWP_NOMOVE = 0x0002
SWP_NOACTIVATE = 0x0010
SWP_SHOWWINDOW = 0x0040
GWL_EXSTYLE = -20
WS_EX_TOPMOST = 0x00000008
PIN_FLAGS = SWP_NOMOVE | SWP_NOSIZE | SWP_NOACTIVATE | SWP_SHOWWINDOW


class WindowsOverlayUnavailable(RuntimeError):
    """user32 could not be loaded or refused the call; the message says why."""


def load_user32() -> Any:
    """user32.dll with the argument types of the two calls used here."""
    import ctypes
    from ctypes import wintypes

    try:
        user32 = ctypes.WinDLL("user32", use_last_error=True)  # type: ignore[attr-defined]
    except (AttributeError, OSError) as exc:  # not Windows
        raise WindowsOverlayUnavailable(f"user32 is unavailable ({exc})") from exc
    user32.SetWindowPos.argtypes = [
        wintypes.HWND,
        wintypes.HWND,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_int,
        wintypes.UINT,
    ]
    user32.SetWindowPos.restype = wintypes.BOOL
    user32.GetWindowLongW.argtypes = [wintypes.HWND, ctypes.c_int]
    user32.GetWindowLongW.restype = wintypes.LONG
    return user32


def pin_windows_overlay(widget: QWidget, *, user32: Any = None) -> bool:
    """Put the overlay back on top of the topmost windows; True if it now has WS_EX_TOPMOST.

    Raises ``WindowsOverlayUnavailable`` when user32 is missing or ``SetWindowPos`` fails."""
    user32 = user32 or load_user32()
    hwnd = int(widget.winId())
    if not user32.SetWindowPos(hwnd, HWND_TOPMOST, 0, 0, 0, 0, PIN_FLAGS):
        raise WindowsOverlayUnavailable(f"SetWindowPos(HWND_TOPMOST) failed for window {hwnd:#x}")
    return bool(user32.GetWindowLongW(hwnd, GWL_EXSTYLE) & WS_EX_TOPMOST)
