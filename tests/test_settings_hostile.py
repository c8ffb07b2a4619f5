"""A hostile settings.json never stops the app: each field falls back on its own, a copy is kept."""

from __future__ import annotations

import json
from dataclasses import asdict

import pytest

from captionist import paths
from captionist.settings import Settings, ShortcutSettings, load_settings, save_settings
from captionist.shortcut_keys import ShortcutAction


def write(content: bytes) -> None:
    paths.settings_file().parent.mkdir(parents=True, exist_ok=True)
    paths.settings_file().write_bytes(content)


UNREADABLE = {
    "non-UTF-8 bytes": b'{"backend": "\xff\xfe"}',
    "deep nesting": b"[" * 100_000 + b"]" * 100_000,
    "deep nesting in an object": b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
    "a number": b"42",
    "a NUL byte": b"\x00",
}


@pytest.mark.parametrize("name", list(UNREADABLE), ids=list(UNREADABLE))
def test_an_unreadable_file_gives_defaults_and_is_kept_as_bad(name: str) -> None:
    write(UNREADABLE[name])
    result = load_settings()
    assert result.settings == Settings()
    assert result.notice is not None and result.notice.startswith("settings file was corrupt (")
    assert "\n" not in result.notice
    assert paths.settings_file().with_name("settings.json.bad").read_bytes() == UNREADABLE[name]
    save_settings(result.settings)  # the next save writes a clean file
    assert load_settings().notice is None


BAD_FIELDS = {
    "sources": [{}],
    "model_path": "/models/\u0000.gguf",
    "transcript_format": "docx",
    "transcript_dir": 5,
    "silence_warning_s": float("nan"),
    "delay_ms": -480,
    "first_run_done": "yes",
    "screen_reader_captions": "on",
    "overlay": {
        "lines": -5,
        "font_size": 10**12,
        "text_color": {"r": 1},
        "background_opacity": 7.5,
        "position": "under the desk",
        "geometry": {"HDMI-1": [0, 0, -800, 120], "DP-1": [10**9, 0, 800, 120], "ok": [10, 20, 800, 120]},
    },
}


def test_each_bad_field_falls_back_alone_and_the_good_ones_stay() -> None:
    data = {**BAD_FIELDS, "backend": "cpu", "transcript_timestamps": False}
    write(json.dumps(data).encode())
    result = load_settings()
    s, d = result.settings, Settings()
    assert (s.backend, s.transcript_timestamps) == ("cpu", False)  # valid fields are kept
    assert (s.sources, s.model_path, s.transcript_format, s.transcript_dir) == ([], "", "txt", "")
    assert (s.silence_warning_s, s.delay_ms, s.first_run_done) == (d.silence_warning_s, 0, False)
    assert s.screen_reader_captions is False
    o = s.overlay
    assert (o.lines, o.font_size, o.text_color, o.background_opacity, o.position) == (
        d.overlay.lines,
        d.overlay.font_size,
        d.overlay.text_color,
        d.overlay.background_opacity,
        d.overlay.position,
    )
    assert o.geometry == {"ok": [10, 20, 800, 120]}
    assert result.notice is not None
    for name in ["sources", "model_path", "silence_warning_s", "overlay.lines", "overlay.geometry"]:
        assert name in result.notice
    bad = paths.settings_file().with_name("settings.json.bad")
    assert json.loads(bad.read_text()) == json.loads(json.dumps(data))
    save_settings(s)
    again = load_settings()
    assert again.notice is None and again.settings == s


def test_deeply_nested_unknown_keys_are_dropped_so_saving_cannot_fail() -> None:
    deep: object = 1
    for _ in range(500):
        deep = [deep]
    write(json.dumps({"future": {"ok": 1}, "nested": deep}).encode())
    result = load_settings()
    assert result.settings.extra == {"future": {"ok": 1}}
    assert result.notice is not None and "nested" in result.notice
    save_settings(result.settings)
    assert json.loads(paths.settings_file().read_text())["future"] == {"ok": 1}


def test_valid_settings_round_trip_without_a_notice_or_copy() -> None:
    s = Settings(sources=["pa:3"], silence_warning_s=3)
    s.overlay.geometry["eDP-1"] = [-1920, 0, 800, 120]  # a screen left of the primary one
    write(json.dumps(asdict(s)).encode())
    result = load_settings()
    assert result.notice is None and result.settings == s
    assert isinstance(result.settings.silence_warning_s, float)
    assert not paths.settings_file().with_name("settings.json.bad").exists()


def test_each_bad_shortcut_falls_back_alone() -> None:
    shortcuts = {
        "enabled": "yes",
        "start_stop": "Ctrl+A, Ctrl+B",  # two combinations in a row
        "show_overlay": 5,
        "click_through": "Ctrl+Alt+K",  # valid: kept
    }
    write(json.dumps({"shortcuts": shortcuts}).encode())
    result = load_settings()
    s, d = result.settings.shortcuts, ShortcutSettings()
    assert (s.enabled, s.start_stop, s.show_overlay, s.click_through) == (
        d.enabled,
        d.start_stop,
        d.show_overlay,
        "Ctrl+Alt+K",
    )
    assert result.notice is not None
    for name in ["shortcuts.enabled", "shortcuts.start_stop", "shortcuts.show_overlay"]:
        assert name in result.notice
    assert "shortcuts.click_through" not in result.notice


@pytest.mark.parametrize(
    "sequence",
    [
        "T",
        "Ctrl+Alt+Banana",
        "Ctrl+Shift+1",
        "Ctrl+Num+5",
        "Ctrl+\u0000",
        "Ctrl+Alt+" + "K" * 100,
        None,
        ["x"],
    ],
)
def test_a_shortcut_no_platform_can_use_takes_its_default(sequence: object) -> None:
    write(json.dumps({"shortcuts": {"click_through": sequence}}).encode())
    result = load_settings()
    assert result.settings.shortcuts == ShortcutSettings()
    assert result.notice is not None and "shortcuts.click_through" in result.notice


def test_shortcuts_that_clash_all_take_their_defaults() -> None:
    """Each is valid alone; together one would fire the other, so none of them is kept."""
    shortcuts = {"enabled": False, "start_stop": "Ctrl+Alt+K", "show_overlay": "Ctrl+Alt+Shift+K"}
    write(json.dumps({"shortcuts": shortcuts}).encode())
    result = load_settings()
    assert result.settings.shortcuts == ShortcutSettings(enabled=False)
    assert result.notice is not None and result.notice.startswith("ignored invalid settings: shortcuts;")


def test_shortcuts_not_an_object_give_the_defaults() -> None:
    write(json.dumps({"shortcuts": ["Ctrl+Alt+K"]}).encode())
    result = load_settings()
    assert result.settings.shortcuts == ShortcutSettings()
    assert result.notice is not None and "shortcuts" in result.notice


def test_shortcuts_round_trip_including_none_for_an_action() -> None:
    s = Settings()
    s.shortcuts.enabled = False
    s.shortcuts.set_key(ShortcutAction.START_STOP, "")  # no shortcut for it
    s.shortcuts.set_key(ShortcutAction.CLICK_THROUGH, "Meta+F9")
    save_settings(s)
    result = load_settings()
    assert result.notice is None and result.settings == s
    assert result.settings.shortcuts.keys() == {
        ShortcutAction.START_STOP: "",
        ShortcutAction.SHOW_OVERLAY: "Ctrl+Alt+Shift+O",
        ShortcutAction.CLICK_THROUGH: "Meta+F9",
    }


def test_a_file_from_before_shortcuts_gets_them_on_without_a_notice() -> None:
    write(json.dumps({"backend": "cpu", "overlay": {"lines": 3}}).encode())
    result = load_settings()
    assert result.notice is None and result.settings.shortcuts == ShortcutSettings()
    assert result.settings.shortcuts.enabled


@pytest.mark.parametrize("value", ["yes", 1, None, {"on": True}], ids=["text", "int", "null", "object"])
def test_start_at_login_must_be_a_bool_and_defaults_to_off(value: object) -> None:
    write(json.dumps({"start_at_login": value, "backend": "cpu"}).encode())
    result = load_settings()
    assert result.settings.start_at_login is False and result.settings.backend == "cpu"
    assert result.notice is not None and "start_at_login" in result.notice
    write(json.dumps({"start_at_login": True}).encode())
    assert load_settings().settings.start_at_login is True


@pytest.mark.parametrize("value", ["yes", 1, None], ids=["text", "int", "null"])
def test_only_while_captioning_must_be_a_bool_and_defaults_to_off(value: object) -> None:
    write(json.dumps({"overlay": {"only_while_captioning": value, "lines": 3}}).encode())
    result = load_settings()
    assert result.settings.overlay.only_while_captioning is False and result.settings.overlay.lines == 3
    assert result.notice is not None and "overlay.only_while_captioning" in result.notice
    write(json.dumps({"overlay": {"only_while_captioning": True}}).encode())
    assert load_settings().settings.overlay.only_while_captioning is True
