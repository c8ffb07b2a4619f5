"""The caption overlay stays inside its screen's available area when its size changes."""

from __future__ import annotations

from PySide6.QtCore import QRect

from captionist.settings import OverlaySettings, Settings
from captionist.ui.overlay import CaptionOverlay
from captionist.ui.preferences import Preferences


def _overlay(qtbot, settings: OverlaySettings) -> CaptionOverlay:
    overlay = CaptionOverlay(settings)
    qtbot.addWidget(overlay)
    overlay.show()
    return overlay


def test_enlarging_a_bottom_overlay_in_preferences_grows_it_upwards(qtbot) -> None:
    settings = Settings()
    overlay = _overlay(qtbot, settings.overlay)
    overlay.apply_position("bottom")
    area = overlay.screen().availableGeometry()
    bottom = overlay.geometry().bottom()
    prefs = Preferences(settings, overlay)
    qtbot.addWidget(prefs)
    prefs.lines.setValue(3)
    prefs.font_size.setValue(40)
    g = overlay.geometry()
    assert g.height() > 3 * 40
    assert area.contains(g), (area, g)
    assert g.bottom() == bottom  # anchored at the bottom: it grew upwards
    assert settings.overlay.geometry[overlay.screen().name()] == [g.x(), g.y(), g.width(), g.height()]


def test_a_top_overlay_keeps_its_top_edge(qtbot) -> None:
    settings = OverlaySettings()
    overlay = _overlay(qtbot, settings)
    overlay.apply_position("top")
    top = overlay.y()
    settings.lines, settings.font_size = 4, 40
    overlay.apply_settings()
    assert overlay.y() == top and overlay.screen().availableGeometry().contains(overlay.geometry())


def test_an_overlay_taller_than_the_screen_is_clamped_to_it(qtbot) -> None:
    settings = OverlaySettings(position="bottom")
    overlay = _overlay(qtbot, settings)
    overlay.apply_position("bottom")
    area = overlay.screen().availableGeometry()
    settings.lines, settings.font_size = 10, 400
    overlay.apply_settings()
    assert area.contains(overlay.geometry()) and overlay.height() == area.height()


def test_a_saved_geometry_below_the_screen_is_brought_back(qtbot) -> None:
    probe = _overlay(qtbot, OverlaySettings())
    area, screen = probe.screen().availableGeometry(), probe.screen().name()
    saved = [area.x() + 10, area.bottom() + 200, 500, 120]
    overlay = _overlay(qtbot, OverlaySettings(position="custom", geometry={screen: saved}))
    overlay.restore_geometry()
    assert area.contains(overlay.geometry())
    assert overlay.geometry().size() == QRect(*saved).size() and overlay.x() == saved[0]
