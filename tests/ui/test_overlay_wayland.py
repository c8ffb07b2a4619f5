"""On Wayland the overlay hands drags to the compositor (startSystemMove/Resize); elsewhere it moves
itself. The platform and the window are fakes, so this runs offscreen."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, Qt

from captionist.settings import OverlaySettings, Settings
from captionist.ui.overlay import GRIP, CaptionOverlay
from captionist.ui.overlay_drag import (
    RESIZE_EDGES,
    WAYLAND_OVERLAY_NOTE,
    DragMode,
    compositor_places_windows,
    start_system_drag,
)
from captionist.ui.preferences import Preferences


class FakeWindow:
    """A QWindow's system drags, recorded; ``accepts`` is what the compositor answers."""

    def __init__(self, accepts: bool = True) -> None:
        self.accepts = accepts
        self.calls: list[tuple[str, object]] = []

    def startSystemMove(self) -> bool:  # noqa: N802 - Qt's name
        self.calls.append(("move", None))
        return self.accepts

    def startSystemResize(self, edges: Qt.Edge) -> bool:  # noqa: N802 - Qt's name
        self.calls.append(("resize", edges))
        return self.accepts


def make_overlay(qtbot, platform: str, window: FakeWindow | None) -> CaptionOverlay:
    overlay = CaptionOverlay(
        OverlaySettings(lines=2, font_size=20), platform_name=lambda: platform, window_handle=lambda: window
    )
    qtbot.addWidget(overlay)
    overlay.resize(400, overlay.height())
    overlay.show()
    return overlay


def corner(overlay: CaptionOverlay) -> QPoint:
    return QPoint(overlay.width() - GRIP // 2, overlay.height() - GRIP // 2)


@pytest.mark.parametrize("name", ["wayland", "wayland-egl", "Wayland"])
def test_the_wayland_platforms_are_placed_by_the_compositor(name: str) -> None:
    assert compositor_places_windows(name)


@pytest.mark.parametrize("name", ["xcb", "windows", "cocoa", "offscreen", ""])
def test_other_platforms_place_their_own_windows(name: str) -> None:
    assert not compositor_places_windows(name)


def test_start_system_drag_picks_move_or_the_corner_resize() -> None:
    window = FakeWindow()
    assert start_system_drag(window, DragMode.MOVE) is True
    assert start_system_drag(window, DragMode.RESIZE) is True
    assert window.calls == [("move", None), ("resize", RESIZE_EDGES)]
    assert RESIZE_EDGES == Qt.Edge.RightEdge | Qt.Edge.BottomEdge
    assert start_system_drag(None, DragMode.MOVE) is False  # no native window yet
    assert start_system_drag(FakeWindow(accepts=False), DragMode.MOVE) is False


def test_on_wayland_a_drag_is_a_system_move_and_nothing_is_remembered(qtbot) -> None:
    window = FakeWindow()
    overlay = make_overlay(qtbot, "wayland", window)
    before = (overlay.geometry(), dict(overlay.settings.geometry), overlay.settings.position)
    qtbot.mousePress(overlay, Qt.MouseButton.LeftButton, pos=QPoint(30, 10))
    qtbot.mouseMove(overlay, QPoint(80, 50))
    qtbot.mouseRelease(overlay, Qt.MouseButton.LeftButton, pos=QPoint(80, 50))
    assert window.calls == [("move", None)]
    assert (overlay.geometry(), overlay.settings.geometry, overlay.settings.position) == before


def test_on_wayland_the_corner_is_a_system_resize(qtbot) -> None:
    window = FakeWindow()
    overlay = make_overlay(qtbot, "wayland", window)
    qtbot.mousePress(overlay, Qt.MouseButton.LeftButton, pos=corner(overlay))
    assert window.calls == [("resize", RESIZE_EDGES)]


def test_a_compositor_that_refuses_falls_back_to_the_manual_drag(qtbot) -> None:
    window = FakeWindow(accepts=False)
    overlay = make_overlay(qtbot, "wayland", window)
    width = overlay.width()
    qtbot.mousePress(overlay, Qt.MouseButton.LeftButton, pos=corner(overlay))
    qtbot.mouseMove(overlay, corner(overlay) + QPoint(40, 0))
    qtbot.mouseRelease(overlay, Qt.MouseButton.LeftButton, pos=corner(overlay) + QPoint(40, 0))
    assert window.calls == [("resize", RESIZE_EDGES)]
    assert overlay.width() == width + 40  # resizing works on Wayland; only moving does not


def test_elsewhere_the_overlay_moves_itself_and_never_asks_the_window(qtbot) -> None:
    window = FakeWindow()
    overlay = make_overlay(qtbot, "xcb", window)
    start = overlay.pos()
    qtbot.mousePress(overlay, Qt.MouseButton.LeftButton, pos=QPoint(30, 10))
    qtbot.mouseMove(overlay, QPoint(80, 50))
    qtbot.mouseRelease(overlay, Qt.MouseButton.LeftButton, pos=QPoint(80, 50))
    assert window.calls == []
    assert overlay.pos() == start + QPoint(50, 40)
    assert overlay.settings.position == "custom" and overlay.settings.geometry


def test_the_limit_is_explained_on_wayland_only(qtbot) -> None:
    settings = Settings()
    for platform, explained in (("wayland", True), ("xcb", False)):
        overlay = CaptionOverlay(settings.overlay, platform_name=lambda p=platform: p)
        qtbot.addWidget(overlay)
        prefs = Preferences(settings, overlay)
        qtbot.addWidget(prefs)
        assert (prefs.wayland_note is not None) is explained
        assert (overlay.toolTip() == WAYLAND_OVERLAY_NOTE) is explained
        if explained:
            assert prefs.wayland_note.text() == WAYLAND_OVERLAY_NOTE
            assert WAYLAND_OVERLAY_NOTE.count(". ") == 0 and WAYLAND_OVERLAY_NOTE.endswith(
                "."
            )  # one sentence
