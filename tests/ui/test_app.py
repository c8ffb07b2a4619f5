from __future__ import annotations

import json

import pytest

from captionist import paths
from captionist.settings import load_settings
from captionist.ui.app import AppParts, build_app
from tests.fakes.fake_engine import FakeModel


@pytest.fixture
def parts(qtbot, fake_sd):
    fake_sd.add_device("Mic", rate=16000, default=True)
    built: list[AppParts] = []

    def make() -> AppParts:
        p = build_app(sd=fake_sd, model_loader=lambda path, backend: FakeModel())
        qtbot.addWidget(p.window)
        qtbot.addWidget(p.overlay)
        built.append(p)
        return p

    yield make
    for p in built:
        p.app.aboutToQuit.disconnect(p.at_exit)
        p.save_timer.stop()


def test_tray_menu_toggles_overlay_and_click_through_and_settings_are_saved(parts, qtbot) -> None:
    p = parts()
    assert p.overlay.isVisible() and p.tray.show_overlay.isChecked()
    p.tray.click_through.trigger()
    assert p.overlay.is_click_through()
    p.tray.click_through.trigger()  # the way back
    assert not p.overlay.is_click_through()
    with qtbot.waitSignal(p.save_timer.timeout, timeout=3000):
        p.tray.show_overlay.trigger()
    assert not p.overlay.isVisible()
    saved = json.loads(paths.settings_file().read_text())
    assert saved["overlay"]["visible"] is False and saved["overlay"]["click_through"] is False
    assert load_settings().settings.overlay.visible is False


def test_corrupt_settings_notice_is_shown(parts) -> None:
    paths.settings_file().parent.mkdir(parents=True)
    paths.settings_file().write_text("{not json")
    p = parts()
    assert p.window.error_banner.text().splitlines()[-1].startswith("settings file was corrupt")
    assert p.settings.latency_ms == {} and p.settings.delay_ms == 0


def test_a_hostile_settings_file_never_stops_the_app(parts, qtbot) -> None:
    paths.settings_file().parent.mkdir(parents=True)
    hostile = {
        "delay_ms": 10**30,
        "latency_ms": {"m.gguf": 123456, "x": "fast", "y": True, "z": [1]},
        "language": {"m.gguf": "xx-XX", "n": 5, "o": None},
        "model_path": "/nonexistent/\u0000.gguf",
        "backend": ["cuda"],
        "transcript_format": "docx",
        "sources": "not a list",
        "overlay": {"font_size": 10**12, "lines": -5, "geometry": {"": [10**20] * 4, "t": "x", "u": [1, 2]}},
    }
    paths.settings_file().write_text(json.dumps(hostile))
    model = paths.models_dir() / "m.gguf"
    model.parent.mkdir(parents=True)
    model.write_bytes(b"GGUF")
    p = parts()
    qtbot.waitUntil(lambda: p.window.model_info is not None)
    assert p.window.latency.value_ms() == 480  # the stored 123456 ms is not a choice: the default
    assert p.settings.latency_ms == {"m.gguf": 123456}  # only well-typed entries were kept
    assert p.settings.language == {"m.gguf": "xx-XX"}
    notice = p.window.error_banner.text()
    assert "ignored invalid settings:" in notice and "latency_ms" in notice and "overlay.geometry" in notice
    assert "delay_ms" in notice and "overlay.font_size" in notice
    assert p.overlay.isVisible() and p.window.open_preferences() is not None


def test_tray_start_stop_follows_session_state(parts, qtbot) -> None:
    p = parts()
    model = paths.models_dir() / "m.gguf"
    model.parent.mkdir(parents=True)
    model.write_bytes(b"GGUF")
    p.window.refresh_models()
    qtbot.waitUntil(lambda: p.window.model_info is not None)
    with qtbot.waitSignal(p.controller.state_changed):
        p.tray.start_stop.trigger()
    assert p.tray.start_stop.text() == "Stop captions"
    with qtbot.waitSignal(p.controller.session_finished, timeout=10000):
        p.tray.start_stop.trigger()
    assert p.tray.start_stop.text() == "Start captions"
