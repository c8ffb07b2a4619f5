"""A fake ``user32`` for ``overlay_windows``: ``SetWindowPos`` records its arguments and sets
WS_EX_TOPMOST for HWND_TOPMOST; ``GetWindowLongW`` returns the extended style."""

from __future__ import annotations

GWL_EXSTYLE = -20
WS_EX_TOPMOST = 0x8


class FakeUser32:
    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.calls: list[tuple[int, ...]] = []
        self.exstyle: dict[int, int] = {}

    def SetWindowPos(self, hwnd: int, after: int, x: int, y: int, cx: int, cy: int, flags: int) -> int:  # noqa: N802
        self.calls.append((hwnd, after, x, y, cx, cy, flags))
        if self.fail:
            return 0
        if after == -1:
            self.exstyle[hwnd] = self.exstyle.get(hwnd, 0) | WS_EX_TOPMOST
        return 1

    def GetWindowLongW(self, hwnd: int, index: int) -> int:  # noqa: N802
        assert index == GWL_EXSTYLE
        return self.exstyle.get(hwnd, 0)
