from __future__ import annotations

import json

import pytest

from captionist import paths
from captionist.settings import load_settings
from captionist.transcript.folders import remember_folder


@pytest.fixture
def parts(built_apps, fake_sd):
    fake_sd.add_device("Mic", rate=16000, default=True)
    return lambda: built_apps(sd=fake_sd)


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
        "latency_ms": {"m.gguf": 1234, "x": "fast", "y": True, "z": [1], "w": 123456},
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
    assert p.window.latency.value_ms() == 480  # the stored 1234 ms is not a choice: the default
    assert p.settings.latency_ms == {"m.gguf": 1234}  # only valid entries were kept
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


def _crashed_journal(folder, name: str, lines: list[bytes]) -> None:
    """A journal left by a session that did not close: a header, then ``lines``."""
    header = {"type": "session", "version": 1, "fmt": "srt", "timestamps": True, "token_ms": 80, "meta": {}}
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.journal.jsonl").write_bytes(json.dumps(header).encode() + b"\n" + b"".join(lines))


def test_the_app_starts_with_bad_journals_and_offers_what_it_recovered(parts) -> None:
    folder = paths.default_transcript_dir()
    ok = [b'{"id": 1, "p": " hello", "t": 0}\n', b'{"id": 2, "p": " there", "t": 80}\n']
    _crashed_journal(folder, "2026-11-29 09-00-00", [ok[0], b"123\n", b"null\n", b'{"p": " x"}\n', ok[1]])
    _crashed_journal(folder, "2026-11-29 10-00-00", [ok[0], b'{"id": 3, "t": -5, "p": "x"}\n', b"\xff\xfe\n"])
    (folder / "2026-11-29 11-00-00.journal.jsonl").write_bytes(b"\x00garbage")
    p = parts()
    notice = p.window.info_banner.text()
    assert "Recovered the interrupted session 2026-11-29 09-00-00.srt" in notice
    assert "Recovered the interrupted session 2026-11-29 10-00-00.srt" in notice
    assert "Could not read 2026-11-29 11-00-00.journal.jsonl" in notice
    assert p.window.info_banner.isVisibleTo(p.window)
    assert p.window.export_button.isEnabled()
    assert p.window.last_transcript == folder / "2026-11-29 10-00-00.srt"
    assert "hello there" in (folder / "2026-11-29 09-00-00.srt").read_text(encoding="utf-8")
    assert (folder / "2026-11-29 11-00-00.journal.jsonl.unreadable").read_bytes() == b"\x00garbage"


def test_a_session_written_outside_the_transcript_folder_is_recovered_too(parts, tmp_path) -> None:
    """The crashed session went to a folder that is not the configured one (the user changed the
    folder while it ran, or it fell back to the default): the folder was remembered when it started."""
    elsewhere = tmp_path / "USB" / "Notes"
    _crashed_journal(elsewhere, "2026-11-29 09-00-00", [b'{"id": 1, "p": " hello", "t": 0}\n'])
    remember_folder(elsewhere)
    p = parts()
    assert "Recovered the interrupted session 2026-11-29 09-00-00.srt" in p.window.info_banner.text()
    assert p.window.last_transcript == elsewhere / "2026-11-29 09-00-00.srt"
    assert "hello" in (elsewhere / "2026-11-29 09-00-00.srt").read_text(encoding="utf-8")


def test_the_window_opens_while_a_folder_does_not_answer_and_the_report_follows(
    parts, qtbot, tmp_path, monkeypatch
) -> None:
    from captionist.ui import app as app_module
    from tests.ui.test_startup_recovery import HungFolder

    share = tmp_path / "share"
    _crashed_journal(share, "2026-11-29 09-00-00", [b'{"id": 1, "p": " hello", "t": 0}\n'])
    remember_folder(share)
    hung = HungFolder(monkeypatch, share)
    monkeypatch.setattr(app_module, "RECOVERY_WAIT_S", 0.05)
    p = parts()  # returns although the share has not answered
    assert p.window.statusBar().currentMessage() == (
        f"Checking {share} for interrupted sessions: its disk is slow to answer."
    )
    assert p.window.info_banner.isHidden()
    hung.answer()
    said = "Recovered the interrupted session 2026-11-29 09-00-00.srt"
    qtbot.waitUntil(lambda: said in p.window.info_banner.text())
    assert p.window.last_transcript == share / "2026-11-29 09-00-00.srt"


def test_nothing_to_recover_says_nothing(parts) -> None:
    p = parts()
    assert p.window.info_banner.isHidden() and not p.window.export_button.isEnabled()


@pytest.mark.parametrize(
    "content",
    [
        b'{"sources": [{}], "overlay": {"geometry": {"": [0, 0, -5, 99999999]}}}',
        b'{"model_path": "\xff\xfe"}',
        b"[" * 100_000,
    ],
    ids=["bad sources and geometry", "non-UTF-8 bytes", "deep nesting"],
)
def test_the_app_starts_with_a_hostile_settings_file(parts, content: bytes) -> None:
    paths.settings_file().parent.mkdir(parents=True)
    paths.settings_file().write_bytes(content)
    p = parts()
    assert p.window.error_banner.text()  # the user is told
    assert paths.settings_file().with_name("settings.json.bad").read_bytes() == content
    assert p.settings.sources == [] and p.overlay.isVisible()


def test_the_tray_icon_says_whether_captionist_is_listening(parts, qtbot, monkeypatch) -> None:
    from PySide6.QtWidgets import QSystemTrayIcon

    monkeypatch.setattr(QSystemTrayIcon, "isSystemTrayAvailable", staticmethod(lambda: True))
    p = parts()
    assert p.tray.icon is not None
    assert p.tray.icon.toolTip() == "Captionist: not captioning"
    model = paths.models_dir() / "m.gguf"
    model.parent.mkdir(parents=True)
    model.write_bytes(b"GGUF")
    p.window.refresh_models()
    qtbot.waitUntil(lambda: p.window.model_info is not None)
    tips: list[str] = []
    p.controller.state_changed.connect(lambda _: tips.append(p.tray.icon.toolTip()))
    with qtbot.waitSignal(p.controller.state_changed):
        p.tray.start_stop.trigger()
    assert p.tray.icon.toolTip() == "Captionist: captioning"
    with qtbot.waitSignal(p.controller.session_finished, timeout=10000):
        p.tray.start_stop.trigger()
    assert tips == [
        "Captionist: captioning",
        "Captionist: finishing the transcript",
        "Captionist: not captioning",
    ]
    p.tray.icon.hide()


def test_a_gpu_driver_that_crashed_the_last_run_is_explained_and_off(parts, qtbot) -> None:
    """A trial a dead process left behind (backend_guard): the window says what happened, the backend
    stays off, and Preferences offers to turn it back on."""
    folder = paths.backend_guard_dir()
    folder.mkdir(parents=True)
    trial = {"backend": "vulkan", "stage": "start_driver", "when": "2026-12-06T05:30:00", "pid": 1}
    (folder / "trial-1-0.json").write_text(json.dumps(trial))
    p = parts()
    assert "while starting the graphics driver for Vulkan" in p.window.info_banner.text()
    assert not list(folder.glob("trial-*"))
    prefs = p.window.open_preferences()
    assert prefs is not None and prefs.turned_off is not None and not prefs.turned_off.isHidden()
    assert list(prefs.turned_off.buttons) == ["vulkan"]
    prefs.close()
    again = parts()  # the next start: still off, not told again
    assert "Vulkan" not in again.window.info_banner.text()
