"""The desktop app with the caption feed on and keywords set: a session's words reach the feed
(events, text, captions file), a spoken keyword is highlighted in the overlay and the transcript,
sent on the feed and announced once; Preferences shows the URL; a port in use is a notice."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import soundfile
import soxr

from captionist import paths
from captionist.pipeline.session_state import SessionState
from captionist.settings import Settings, save_settings
from captionist.ui.app import AppParts, build_app
from tests.fakes.fake_engine import FakeModel, expected_words
from tests.fakes.fake_hotkeys import FakeHotkeyFactory
from tests.feed.feed_client import read_sse, run


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_app(qtbot, fake_sd, wav_48k: Path, settings: Settings) -> tuple[AppParts, list[str]]:
    audio, rate = soundfile.read(wav_48k, dtype="float32")
    fake_sd.add_device("Mic", rate=rate, channels=2, audio=audio, default=True)
    model = paths.models_dir() / "m.gguf"
    model.parent.mkdir(parents=True, exist_ok=True)
    model.write_bytes(b"GGUF")
    settings.model_path = str(model)
    save_settings(settings)
    parts = build_app(
        sd=fake_sd, model_loader=lambda path, backend: FakeModel(), shortcut_listener=FakeHotkeyFactory()
    )
    qtbot.addWidget(parts.window)
    qtbot.addWidget(parts.overlay)
    return parts, expected_words(soxr.resample(audio[:, 0], rate, 16000).astype(np.float32))


@pytest.fixture
def feed_app(qtbot, fake_sd, wav_48k, tmp_path) -> Iterator[tuple[AppParts, list[str], Path]]:
    words = expected_words(soxr.resample(soundfile.read(wav_48k, dtype="float32")[0][:, 0], 48000, 16000))
    settings = Settings(transcript_dir=str(tmp_path / "transcripts"))
    settings.feed.enabled, settings.feed.port = True, free_port()
    settings.feed.text_file, settings.feed.text_file_path = True, str(tmp_path / "obs" / "captions.txt")
    settings.alerts.keywords = [words[1], "never said"]
    parts, want = start_app(qtbot, fake_sd, wav_48k, settings)
    yield parts, want, tmp_path / "obs" / "captions.txt"
    parts.app.aboutToQuit.disconnect(parts.at_exit)
    parts.save_timer.stop()
    parts.controller.shutdown()
    parts.feed.shutdown()


def run_session(qtbot, parts: AppParts) -> None:
    qtbot.waitUntil(lambda: parts.window.model_info is not None)
    with qtbot.waitSignal(parts.controller.session_finished, timeout=30000):
        assert parts.window.start_session()
        qtbot.waitUntil(lambda: parts.controller.state == SessionState.RUNNING)
        qtbot.wait(600)
        parts.controller.stop()


def test_a_session_goes_to_the_feed_and_a_keyword_is_shown_everywhere(qtbot, feed_app) -> None:
    parts, want, captions = feed_app
    assert parts.feed.url == f"http://127.0.0.1:{parts.settings.feed.port}/"
    notices: list[str] = []
    parts.window.statusBar().messageChanged.connect(notices.append)  # offscreen has no tray: the notice line
    run_session(qtbot, parts)
    keyword = want[1]
    got = run(
        lambda s: read_sse(
            s, parts.feed.url + "events?after=0", lambda r: r.messages[-1]["type"] == "session_stop"
        )
    )
    assert "".join(t["text"] for t in got.tokens()).split() == want
    [alert] = [m for m in got.messages if m["type"] == "alert"]
    assert alert["keyword"] == keyword and [got.tokens()[i]["text"].strip() for i in alert["tokens"]] == [
        keyword
    ]
    said = f"“{keyword}” was said: “{keyword}” at 00:00 into the session"
    assert notices.count(said) == 1 and parts.notifier.shown == [
        (f"“{keyword}” was said", said.split(": ", 1)[1])
    ]
    assert keyword in parts.window.transcript.highlighted_words()
    assert set(parts.overlay.alert_words()) <= {keyword}
    assert parts.feed.text_file is not None and parts.feed.text_file.wait(10)  # written on its thread
    lines = captions.read_text().splitlines()
    assert lines and lines == parts.feed.hub.current_lines(
        parts.settings.overlay.lines, parts.settings.feed.width
    )
    assert " ".join(lines) in " ".join(want)


def test_preferences_show_the_url_and_switch_the_feed(qtbot, feed_app) -> None:
    parts, _, _ = feed_app
    prefs = parts.window.open_preferences()
    assert prefs is not None and prefs.feed_box is not None and prefs.alerts_box is not None
    box = prefs.feed_box
    assert box.url.text() == parts.feed.url and box.copy.isEnabled()
    box.lan.setChecked(True)  # to the network: a token is made, kept and put in the URL
    token = parts.settings.feed.token
    assert token and box.url.text().endswith(f"?token={token}") and parts.feed.server.bind.host == "0.0.0.0"
    box.new_token.click()
    assert parts.settings.feed.token != token and box.url.text().endswith(parts.settings.feed.token)
    box.enabled.setChecked(False)
    assert parts.feed.server is None and box.url.text() == "" and not box.copy.isEnabled()
    prefs.alerts_box.set_keywords_text("Alice, , budget review, alice")
    assert parts.settings.alerts.keywords == ["Alice", "budget review", "alice"]
    assert [k.text for k in parts.alerts.keywords.keywords] == ["Alice", "budget review"]
    assert prefs.alerts_box.keywords.text() == "Alice, budget review"
    prefs.alerts_box.set_colour("#00ff00")  # the highlight everywhere, and the page's style
    assert parts.settings.alerts.color == "#00ff00" and parts.feed.hub.style()["alert_color"] == "#00ff00"
    assert parts.window.transcript.highlighter.format.background().color().name() == "#00ff00"
    prefs.font_size.setValue(40)  # an overlay style change restyles the page too
    assert parts.feed.hub.style()["font_size"] == 40


def test_a_port_in_use_is_a_notice_and_the_app_runs_on(qtbot, fake_sd, wav_48k, tmp_path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        settings = Settings(transcript_dir=str(tmp_path / "t"))
        settings.feed.enabled, settings.feed.port = True, taken.getsockname()[1]
        parts, _ = start_app(qtbot, fake_sd, wav_48k, settings)
        try:
            assert parts.feed.server is None and "cannot serve captions" in (parts.feed.error or "")
            assert "caption feed: cannot serve captions" in parts.window.error_banner.text()
            run_session(qtbot, parts)  # captions work without the feed
            assert parts.window.transcript.plain_text().strip()
        finally:
            parts.app.aboutToQuit.disconnect(parts.at_exit)
            parts.save_timer.stop()
            parts.controller.shutdown()


def test_a_captions_file_that_cannot_be_written_is_a_red_line_until_it_works(
    qtbot, fake_sd, wav_48k, tmp_path
) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    settings = Settings(transcript_dir=str(tmp_path / "t"))
    settings.feed.text_file, settings.feed.text_file_path = True, str(blocker / "captions.txt")
    parts, _ = start_app(qtbot, fake_sd, wav_48k, settings)
    try:
        banner = parts.window.error_banner
        said = "caption feed: cannot write the captions file"
        qtbot.waitUntil(lambda: said in banner.text(), timeout=10000)
        blocker.unlink()
        run_session(qtbot, parts)  # the captions change: the file is written, and the line goes
        qtbot.waitUntil(lambda: "caption feed" not in banner.text(), timeout=10000)
        assert (blocker / "captions.txt").read_text().strip()
    finally:
        parts.app.aboutToQuit.disconnect(parts.at_exit)
        parts.save_timer.stop()
        parts.controller.shutdown()
        parts.feed.shutdown()
