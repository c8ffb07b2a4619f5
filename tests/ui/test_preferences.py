from __future__ import annotations

import pytest

from captionist.settings import Settings
from captionist.ui.overlay import CaptionOverlay
from captionist.ui.preferences import Preferences


@pytest.fixture
def prefs(qtbot):
    settings = Settings()
    overlay = CaptionOverlay(settings.overlay)
    prefs = Preferences(settings, overlay)
    qtbot.addWidget(overlay)
    qtbot.addWidget(prefs)
    return prefs


def test_overlay_controls_apply_live(prefs: Preferences, qtbot) -> None:
    before = prefs.overlay.height()
    with qtbot.waitSignal(prefs.settings_changed):
        prefs.lines.setValue(5)
    assert prefs.settings.overlay.lines == 5 and prefs.overlay.height() > before
    prefs.opacity.setValue(25)
    assert prefs.settings.overlay.background_opacity == 0.25
    prefs.shadow.setChecked(True)
    assert prefs.settings.overlay.shadow
    prefs.set_colour("newest_color", "#123456")
    assert prefs.settings.overlay.newest_color == "#123456"
    with pytest.raises(ValueError, match="not a colour"):
        prefs.set_colour("text_color", "nope")
    prefs.click_through.setChecked(True)
    assert prefs.overlay.is_click_through()


def test_transcript_controls(prefs: Preferences, tmp_path) -> None:
    prefs.format.setCurrentText("vtt")
    prefs.timestamps.setChecked(False)
    prefs.set_folder(tmp_path)
    s = prefs.settings
    assert (s.transcript_format, s.transcript_timestamps, s.transcript_folder()) == ("vtt", False, tmp_path)
