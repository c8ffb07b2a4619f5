"""How the overlay is moved and resized: by hand (``move``/``resize``) or by the compositor on Wayland.

Usage::

    mode = DragMode.RESIZE if in_corner else DragMode.MOVE
    if compositor_places_windows(QGuiApplication.platformName()):
        started = start_system_drag(overlay.windowHandle(), mode)   # False: do it by hand

On Wayland a client cannot place its own windows: ``QWidget.move()`` is ignored and
``WindowStaysOnTopHint`` is a request the compositor may refuse. What works there is handing the
drag to the compositor (``QWindow.startSystemMove`` / ``startSystemResize``), which then decides
where the window goes; the position is not reported back, so it is not remembered. Elsewhere
(X11, Windows, macOS) the overlay moves itself, which is what remembers positions per screen.
"""

from __future__ import annotations

import enum
from typing import Protocol

from PySide6.QtCore import Qt

WAYLAND_OVERLAY_NOTE = (
    "On Wayland the compositor decides whether captions stay on top and where they go, "
    "so their position is not remembered."
)
RESIZE_EDGES = Qt.Edge.RightEdge | Qt.Edge.BottomEdge  # the overlay's grip is its bottom-right corner


class DragMode(enum.Enum):
    MOVE = "move"
    RESIZE = "resize"


class SystemDragWindow(Protocol):
    """What a system drag needs of a ``QWindow``."""

    def startSystemMove(self) -> bool: ...  # noqa: N802 - Qt's name

    def startSystemResize(self, edges: Qt.Edge) -> bool: ...  # noqa: N802 - Qt's name


def compositor_places_windows(platform_name: str) -> bool:
    """Whether windows are placed by the compositor, not by the app (the Wayland QPA platforms)."""
    return platform_name.lower().startswith("wayland")


def start_system_drag(window: SystemDragWindow | None, mode: DragMode) -> bool:
    """Hand a drag to the compositor; whether it took it (False: no window, or it refused)."""
    if window is None:
        return False
    if mode is DragMode.RESIZE:
        return bool(window.startSystemResize(RESIZE_EDGES))
    return bool(window.startSystemMove())
