from __future__ import annotations

import json
from pathlib import Path

from captionist import paths
from captionist.settings import Settings, load_settings, save_settings


def test_round_trip_in_config_dir(_isolated_home: Path) -> None:
    s = Settings()
    s.delay_ms = 960
    s.sources = ["pulse:null.monitor", "3"]
    s.overlay.lines = 4
    s.overlay.geometry["HDMI-1"] = [10, 20, 800, 120]
    path = save_settings(s)
    assert path == paths.settings_file() and path.is_relative_to(_isolated_home)
    loaded = load_settings()
    assert loaded.notice is None and loaded.settings == s


def test_missing_file_gives_defaults() -> None:
    result = load_settings()
    assert result.settings == Settings() and result.notice is None


def test_upgrade_keeps_unknown_keys_and_fills_new_ones() -> None:
    path = paths.settings_file()
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"delay_ms": 240, "future_feature": {"x": 1}, "overlay": {"lines": 3}}))
    result = load_settings()
    assert result.notice is None
    assert result.settings.delay_ms == 240 and result.settings.overlay.lines == 3
    assert result.settings.overlay.font_size == Settings().overlay.font_size  # new key: default
    save_settings(result.settings)
    assert json.loads(path.read_text())["future_feature"] == {"x": 1}


def test_corrupt_file_falls_back_to_defaults_with_notice() -> None:
    path = paths.settings_file()
    path.parent.mkdir(parents=True)
    path.write_text('{"delay_ms": 480,,,')
    result = load_settings()
    assert result.settings == Settings()
    assert result.notice.startswith("settings file was corrupt")
    assert path.with_name("settings.json.corrupt").read_text() == '{"delay_ms": 480,,,'
    assert not path.exists()


def test_wrong_types_are_dropped_individually() -> None:
    path = paths.settings_file()
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"delay_ms": "fast", "backend": "cpu", "overlay": {"outline": 1, "lines": 5}}))
    result = load_settings()
    assert result.settings.delay_ms == Settings().delay_ms and result.settings.backend == "cpu"
    assert result.settings.overlay.lines == 5 and result.settings.overlay.outline is True
    assert result.notice == "ignored invalid settings: delay_ms, overlay.outline"
