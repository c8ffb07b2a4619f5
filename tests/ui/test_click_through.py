"""Click-through is one state: the shortcut, the tray menu and Preferences all show and change it,
and the overlay says briefly what changed."""

from __future__ import annotations

from PySide6.QtGui import QIcon, QShortcut

from captionist.ui.overlay import CLICK_THROUGH_SHORTCUT
from captionist.ui.tray import Tray


def _press_shortcut(win) -> None:
    (shortcut,) = [s for s in win.findChildren(QShortcut) if s.key().toString() == CLICK_THROUGH_SHORTCUT]
    shortcut.activated.emit()


def test_the_shortcut_shows_in_preferences_tray_and_overlay(app_parts, qtbot) -> None:
    win, controller = app_parts[0], app_parts[1]
    overlay = win.overlay
    tray = Tray(QIcon(), win, overlay, controller)
    prefs = win.open_preferences()
    assert not prefs.click_through.isChecked() and overlay.hint_text() == ""

    _press_shortcut(win)
    assert overlay.is_click_through() and overlay.settings.click_through
    assert prefs.click_through.isChecked() and tray.click_through.isChecked()
    assert CLICK_THROUGH_SHORTCUT in overlay.hint_text()
    with qtbot.waitSignal(overlay._hint_timer.timeout, timeout=10000):
        pass
    assert overlay.hint_text() == ""  # the hint was brief

    tray.click_through.trigger()  # back from the tray menu
    assert not overlay.is_click_through()
    assert not prefs.click_through.isChecked() and not tray.click_through.isChecked()
    assert overlay.hint_text().startswith("Click-through off")

    prefs.click_through.setChecked(True)  # and from Preferences
    assert overlay.is_click_through() and tray.click_through.isChecked()


def test_restoring_click_through_at_start_shows_no_hint(qtbot) -> None:
    from captionist.settings import OverlaySettings
    from captionist.ui.overlay import CaptionOverlay

    overlay = CaptionOverlay(OverlaySettings(click_through=True))
    qtbot.addWidget(overlay)
    assert overlay.is_click_through() and overlay.hint_text() == ""


def test_the_hint_is_drawn_on_the_overlay(qtbot) -> None:
    from captionist.settings import OverlaySettings
    from captionist.ui.overlay import CaptionOverlay

    overlay = CaptionOverlay(OverlaySettings(background_opacity=0.0, shadow=False, outline=False))
    qtbot.addWidget(overlay)
    overlay.resize(600, 120)
    before = overlay.grab().toImage()
    overlay.set_click_through(True)
    after = overlay.grab().toImage()
    assert before.pixelColor(20, 14).alpha() == 0
    assert after.pixelColor(20, 14).alpha() > 200


def test_the_hint_names_the_global_shortcut_while_one_works(qtbot) -> None:
    from captionist.settings import OverlaySettings
    from captionist.ui.overlay import CaptionOverlay

    overlay = CaptionOverlay(OverlaySettings())
    qtbot.addWidget(overlay)
    overlay.set_global_shortcut("Ctrl+Alt+Shift+T")
    overlay.set_click_through(True)
    assert overlay.hint_text() == "Click-through on — press Ctrl+Alt+Shift+T to turn it off"
    overlay.set_click_through(False)
    assert overlay.hint_text() == "Click-through off — drag to move, corner to resize"
    overlay.set_global_shortcut(None)  # global shortcuts stopped: the ways that are left
    overlay.set_click_through(True)
    assert (
        overlay.hint_text()
        == f"Click-through on — turn it off from the tray menu or {CLICK_THROUGH_SHORTCUT}"
    )


def test_a_hint_wider_than_the_overlay_stays_inside_it(qtbot) -> None:
    from captionist.settings import OverlaySettings
    from captionist.ui.overlay import CaptionOverlay

    overlay = CaptionOverlay(OverlaySettings(background_opacity=0.0, shadow=False, outline=False))
    qtbot.addWidget(overlay)
    overlay.resize(220, 120)
    overlay.set_global_shortcut("Ctrl+Alt+Shift+T")
    overlay.set_click_through(True)
    image = overlay.grab().toImage()
    assert image.pixelColor(20, 14).alpha() > 200  # the hint box is drawn ...
    right = [image.pixelColor(x, 14).alpha() for x in range(image.width() - 4, image.width())]
    assert right == [0, 0, 0, 0]  # ... and ends inside the overlay (elided), not cut off at its edge
