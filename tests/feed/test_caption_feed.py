"""The desktop app's feed object: settings in, server and captions file out."""

from __future__ import annotations

import json
import socket
from pathlib import Path

from PySide6.QtCore import QObject, Signal

from captionist.feed.caption_feed import LAN_HOST, CaptionFeed, page_style
from captionist.settings import Settings
from tests.fakes.caption_updates import UpdateMaker


class FakeController(QObject):
    session_started = Signal(object)
    caption = Signal(object)
    session_finished = Signal(object)


class Config:
    model_path = Path("/models/demo.gguf")
    sources = ["Mic"]
    latency_ms = 480
    language = None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_settings_start_move_and_stop_the_server_and_keep_one_token(qapp) -> None:
    settings = Settings()
    feed = CaptionFeed(settings)
    saves: list[int] = []
    feed.settings_changed.connect(lambda: saves.append(1))
    feed.apply()
    assert feed.server is None and feed.url == "" and feed.error is None  # off by default
    settings.feed.enabled, settings.feed.port = True, free_port()
    feed.apply()
    server = feed.server
    assert server is not None and feed.url == f"http://127.0.0.1:{settings.feed.port}/"
    feed.apply()
    assert feed.server is server  # nothing changed: the readers stay connected
    settings.feed.lan = True
    feed.apply()
    token = settings.feed.token
    assert (
        token and saves == [1] and feed.server.bind.host == LAN_HOST and feed.url.endswith(f"?token={token}")
    )
    settings.feed.lan = False
    feed.apply()
    settings.feed.lan = True
    feed.apply()
    assert settings.feed.token == token and saves == [1]  # kept: a URL pasted into OBS stays valid
    feed.new_token()
    assert settings.feed.token != token and feed.url.endswith(settings.feed.token)
    settings.feed.enabled = False
    feed.apply()
    assert feed.server is None and feed.url == ""
    feed.shutdown()


def test_the_captions_file_is_a_setting_of_its_own_and_follows_the_session(qapp, tmp_path: Path) -> None:
    settings = Settings()
    settings.feed.text_file, settings.feed.text_file_path = True, str(tmp_path / "c.txt")
    settings.overlay.lines = 1
    feed = CaptionFeed(settings)
    ctl = FakeController()
    feed.attach(ctl)
    feed.apply()
    assert feed.text_file is not None and feed.text_file.wait(10)
    assert feed.server is None and (tmp_path / "c.txt").read_text() == ""
    u = UpdateMaker()
    ctl.session_started.emit(Config())
    ctl.caption.emit(u.make([" hello", " world"], ends=[2]))
    ctl.caption.emit(u.make([" again"]))
    assert feed.text_file.wait(10) and (tmp_path / "c.txt").read_text() == "again\n"
    ctl.session_finished.emit(None)
    events = [json.loads(t) for _, t in feed.hub.read(after=0).items]
    assert [e["type"] for e in events] == [
        "style",
        "session_start",
        "tokens",
        "utterance_end",
        "tokens",
        "session_stop",
    ]
    assert events[1] == {"seq": 2, "type": "session_start", "model": "demo.gguf", "sources": ["Mic"],
                         "latency_ms": 480, "language": None}  # fmt: skip


def test_apply_restyles_the_page(qapp) -> None:
    settings = Settings()
    feed = CaptionFeed(settings)
    assert feed.hub.style() == page_style(settings)
    settings.overlay.font_size, settings.alerts.color = 40, "#00ff00"
    feed.apply()
    assert feed.hub.style()["font_size"] == 40 and feed.hub.style()["alert_color"] == "#00ff00"


def test_a_failing_captions_file_is_reported_on_the_window_thread_and_clears(qtbot, tmp_path: Path) -> None:
    import threading

    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    settings = Settings()
    settings.feed.text_file, settings.feed.text_file_path = True, str(blocker / "c.txt")
    feed = CaptionFeed(settings)
    threads: list[threading.Thread] = []
    feed.changed.connect(lambda: threads.append(threading.current_thread()))
    with qtbot.waitSignal(feed.changed, timeout=10000):
        feed.apply_text_file()
    assert threads == [threading.main_thread()]
    assert feed.error is not None and "cannot write the captions file" in feed.error
    blocker.unlink()
    ctl = FakeController()
    feed.attach(ctl)
    with qtbot.waitSignal(feed.changed, timeout=10000):
        ctl.session_started.emit(Config())  # the lines change: written again, and it works
    assert feed.error is None and (blocker / "c.txt").read_text() == ""
    assert threads == [threading.main_thread()] * 2
    feed.shutdown()
    assert feed.text_file is None
