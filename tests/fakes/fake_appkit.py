"""Fakes of pyobjc's ``objc`` and ``AppKit`` for the overlay's NSWindow flags: ``objc_object``
turns the pointer from ``winId()`` into an NSView whose ``window()`` records every call.

    objc, appkit = FakeObjc(), FakeAppKit()
    pin_macos_overlay(overlay, objc=objc, appkit=appkit)
    objc.windows[0].calls   # [("setHidesOnDeactivate_", False), ("setLevel_", 25), ...]
"""

from __future__ import annotations

from typing import Any


class FakeAppKit:
    """The AppKit constants used, with Apple's values."""

    NSStatusWindowLevel = 25
    NSScreenSaverWindowLevel = 1000
    NSWindowCollectionBehaviorCanJoinAllSpaces = 1 << 0
    NSWindowCollectionBehaviorStationary = 1 << 4
    NSWindowCollectionBehaviorFullScreenAuxiliary = 1 << 8


class FakeNSWindow:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self._hides, self._level, self._behavior = True, 3, 0  # what Qt gives a Qt.Tool panel

    def setHidesOnDeactivate_(self, value: bool) -> None:  # noqa: N802 - mirrors pyobjc
        self.calls.append(("setHidesOnDeactivate_", value))
        self._hides = value

    def setLevel_(self, value: int) -> None:  # noqa: N802
        self.calls.append(("setLevel_", value))
        self._level = value

    def setCollectionBehavior_(self, value: int) -> None:  # noqa: N802
        self.calls.append(("setCollectionBehavior_", value))
        self._behavior = value

    def hidesOnDeactivate(self) -> bool:  # noqa: N802
        return self._hides

    def level(self) -> int:
        return self._level

    def collectionBehavior(self) -> int:  # noqa: N802
        return self._behavior


class FakeNSView:
    def __init__(self, pointer: int, window: FakeNSWindow | None) -> None:
        self.pointer, self._window = pointer, window

    def window(self) -> FakeNSWindow | None:
        return self._window


class FakeObjc:
    """``objc.objc_object(c_void_p=pointer)``: one view (and window) per pointer."""

    def __init__(self, windowless: bool = False) -> None:
        self.windowless = windowless
        self.views: dict[int, FakeNSView] = {}
        self.windows: list[FakeNSWindow] = []

    def objc_object(self, *, c_void_p: int) -> FakeNSView:
        if c_void_p not in self.views:
            window = None if self.windowless else FakeNSWindow()
            if window is not None:
                self.windows.append(window)
            self.views[c_void_p] = FakeNSView(c_void_p, window)
        return self.views[c_void_p]
