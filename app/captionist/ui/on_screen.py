"""Whether a window is where the user can see it: shown, and not minimized.

    if on_screen(window): ...

Hidden (closed to the tray) or minimized, it is not. Used by the level meters (they open the
microphone only then) and by the notifier of problems raised while the window is away.
"""

from __future__ import annotations

from PySide6.QtWidgets import QWidget


def on_screen(window: QWidget) -> bool:
    return window.isVisible() and not window.isMinimized()
