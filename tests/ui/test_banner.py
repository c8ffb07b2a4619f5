"""The red error banner: dismissable, and each line leaves when the problem it reports has ended;
the blue info banner says what crash recovery found and offers its session for export."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt

from captionist.audio.capture import Capture
from captionist.audio.devices import list_sources
from captionist.pipeline.session_state import SessionState
from captionist.transcript import parse
from captionist.ui.banner import Problem
from tests.ui.conftest import wait_for_model


def test_the_close_button_dismisses_the_banner(app_parts, qtbot) -> None:
    win = app_parts[0]
    win.show_error("settings file was corrupt; using defaults")
    win.show_error("something else went wrong")
    assert not win.error_banner.isHidden()
    qtbot.mouseClick(win.error_banner.close_button, Qt.MouseButton.LeftButton)
    assert win.error_banner.isHidden() and win.error_banner.text() == ""


def test_ticking_a_source_clears_the_no_source_error_only(app_parts) -> None:
    win = app_parts[0]
    win.show_error("settings file was corrupt; using defaults")
    win.sources.list.item(0).setCheckState(Qt.CheckState.Unchecked)
    assert not win.start_session()
    assert win.error_banner.text().splitlines()[-1] == "Tick at least one audio source."
    win.sources.list.item(0).setCheckState(Qt.CheckState.Checked)
    assert win.error_banner.text() == "settings file was corrupt; using defaults"


def test_a_model_that_loads_clears_the_model_error(app_parts, qtbot, tmp_path: Path) -> None:
    win = app_parts[0]
    win.show_error("cannot use the model voxtral-q4.gguf: truncated", Problem.MODEL)
    other = win.store.root / "other.gguf"
    other.write_bytes(b"GGUF" + bytes(8))
    win.refresh_models()
    win.model_combo.setCurrentIndex(win.model_combo.findData(str(other)))
    wait_for_model(qtbot, win)
    assert win.error_banner.isHidden()


def test_sources_listed_again_clear_the_audio_error(app_parts) -> None:
    win, _, _, fake_sd, _ = app_parts
    broken = [True]

    def lister():
        if broken[0]:
            raise RuntimeError("audio is unavailable: PortAudio is restarting")
        return list_sources(fake_sd, pactl=None)

    win._list_sources = lister
    win.refresh_sources()
    assert win.error_banner.text() == "audio is unavailable: PortAudio is restarting"
    broken[0] = False
    win.refresh_sources()
    assert win.error_banner.isHidden()


def test_a_lost_device_shows_until_it_is_back(app_parts, fake_sd) -> None:
    win, controller = app_parts[0], app_parts[1]
    # The exact messages Capture reports when a source goes away and returns.
    now = [0.0]
    mic = list_sources(fake_sd, pactl=None)[0]
    capture = Capture([mic], sd=fake_sd, reconnect_interval_s=1.0, clock=lambda: now[0])
    capture.start()
    fake_sd.disconnect("USB Mic")
    capture.read(0)
    lost = capture.poll_events()
    fake_sd.reconnect("USB Mic")
    now[0] = 2.0
    capture.read(0)
    back = capture.poll_events()
    capture.stop()

    win.show_error("settings file was corrupt; using defaults")
    controller.notice.emit(lost[0])
    assert win.error_banner.text().splitlines()[-1] == (
        "Audio source 'USB Mic' disappeared; waiting for it to come back."
    )
    controller.notice.emit(back[0])
    assert win.error_banner.text() == "settings file was corrupt; using defaults"


def test_a_lost_device_line_goes_when_the_session_ends(app_parts) -> None:
    win, controller = app_parts[0], app_parts[1]
    controller.notice.emit("audio source 'USB Mic' disappeared; waiting for it to come back")
    assert not win.error_banner.isHidden()
    controller.state_changed.emit(SessionState.IDLE)
    assert win.error_banner.isHidden()


def test_recovery_notice_offers_the_recovered_session(app_parts, qtbot, tmp_path: Path) -> None:
    win = app_parts[0]
    session = tmp_path / "2024-05-01 10-00.srt"
    session.write_text("1\n00:00:01,000 --> 00:00:02,000\nhello world\n")
    assert not win.export_button.isEnabled()
    win.show_recovery_notice("Recovered the session of 1 May 10:00 after a crash.", session)
    assert not win.info_banner.isHidden()
    assert win.info_banner.text() == "Recovered the session of 1 May 10:00 after a crash."
    assert win.error_banner.isHidden()  # information, not an error
    assert win.export_button.isEnabled()
    dest = tmp_path / "out.vtt"
    assert win.export_last(dest), win.error_banner.text()
    assert " ".join(c.text for c in parse("vtt", dest.read_text())).split() == ["hello", "world"]
    qtbot.mouseClick(win.info_banner.close_button, Qt.MouseButton.LeftButton)
    assert win.info_banner.isHidden() and win.export_button.isEnabled()


def test_recovery_notice_without_a_session_exports_nothing(app_parts) -> None:
    win = app_parts[0]
    win.show_recovery_notice("One journal could not be read; it was set aside.", None)
    assert not win.info_banner.isHidden() and not win.export_button.isEnabled()


def test_added_is_said_once_per_line_shown(qtbot) -> None:
    from captionist.ui.banner import Banner, BannerKind

    banner = Banner(BannerKind.ERROR)
    qtbot.addWidget(banner)
    added: list[str] = []
    banner.added.connect(added.append)
    banner.show_message("mic gone", Problem.DEVICE)
    banner.show_message("disk full")
    banner.show_message("mic gone", Problem.DEVICE)  # a repeat moves to the end: not new
    assert added == ["mic gone", "disk full"] and banner.text() == "disk full\nmic gone"
    banner.resolve(Problem.DEVICE)
    banner.show_message("mic gone", Problem.DEVICE)  # it went, and came up again: new
    assert added == ["mic gone", "disk full", "mic gone"]


def test_show_only_replaces_the_reason_of_a_problem_and_keeps_a_repeat_quiet(qtbot) -> None:
    from captionist.ui.banner import Banner, BannerKind

    banner = Banner(BannerKind.ERROR)
    qtbot.addWidget(banner)
    added: list[str] = []
    banner.added.connect(added.append)
    banner.show_message("disk full")
    banner.show_only("not answering", Problem.AUDIO)
    banner.show_only("not answering", Problem.AUDIO)  # listed again, same reason: no new line
    assert added == ["disk full", "not answering"]
    assert banner.text() == "disk full\nnot answering"
    banner.show_only("PortAudio failed", Problem.AUDIO)  # a new reason replaces the old one
    assert banner.text() == "disk full\nPortAudio failed" and added[-1] == "PortAudio failed"
    assert banner.problems() == [Problem.GENERAL, Problem.AUDIO]
