"""The idle level meters open the microphone only while the main window is on screen: hidden in
the tray, minimized or not yet shown, Captionist opens no device until captions start, and a
session's own capture is never touched by the window coming and going."""

from __future__ import annotations

from pathlib import Path

from captionist.audio.capture import Capture
from captionist.audio.devices import list_sources
from captionist.models import ModelStore
from captionist.pipeline.controller import SessionController
from captionist.settings import Settings
from captionist.ui.level_preview import LevelPreview
from captionist.ui.main_window import MainWindow
from tests.conftest import speech_like
from tests.fakes.fake_engine import FakeModel
from tests.ui.conftest import wait_for_model


def open_streams(fake_sd) -> list:
    return [s for s in fake_sd.streams if s.active and not s.closed]


def window(qtbot, fake_sd, tmp_path: Path) -> tuple[MainWindow, SessionController]:
    fake_sd.add_device("Mic", rate=16000, default=True)
    models = tmp_path / "models"
    models.mkdir()
    (models / "m.gguf").write_bytes(b"GGUF")
    ctl = SessionController(sd=fake_sd, model_loader=lambda p, b: FakeModel())
    win = MainWindow(
        ctl,
        Settings(transcript_dir=str(tmp_path / "t")),
        list_sources=lambda: list_sources(fake_sd, pactl=None),
        model_store=ModelStore(models, demo=tmp_path / "none.gguf"),
        preview=LevelPreview(lambda chosen: Capture(chosen, sd=fake_sd)),
    )
    qtbot.addWidget(win)
    return win, ctl


def test_no_device_is_opened_until_the_window_is_on_screen(qtbot, fake_sd, tmp_path) -> None:
    win, _ = window(qtbot, fake_sd, tmp_path)
    win.refresh_sources()  # what start-up and Refresh sources do
    assert fake_sd.streams == []
    win.show()
    qtbot.waitUntil(lambda: len(open_streams(fake_sd)) == 1)
    open_streams(fake_sd)[0].push(speech_like(16000, [(0.2, True)], amp=0.5))
    qtbot.waitUntil(lambda: win.sources.meters["0"].value() > 50, timeout=3000)


def test_hiding_or_minimizing_the_window_closes_the_microphone(qtbot, fake_sd, tmp_path) -> None:
    win, _ = window(qtbot, fake_sd, tmp_path)
    win.show()
    qtbot.waitUntil(lambda: len(open_streams(fake_sd)) == 1)
    win.hide()  # closed to the tray
    assert open_streams(fake_sd) == [] and not win.meters.timer.isActive()
    assert all(m.value() == m.minimum() for m in win.sources.meters.values())  # no stale level shown
    win.refresh_sources()  # a device plugged in meanwhile: still nothing opened
    assert open_streams(fake_sd) == []
    win.show()
    qtbot.waitUntil(lambda: len(open_streams(fake_sd)) == 1)
    win.showMinimized()
    qtbot.waitUntil(lambda: open_streams(fake_sd) == [])
    win.showNormal()
    qtbot.waitUntil(lambda: len(open_streams(fake_sd)) == 1)


def test_a_session_keeps_its_capture_while_the_window_comes_and_goes(qtbot, fake_sd, tmp_path) -> None:
    win, ctl = window(qtbot, fake_sd, tmp_path)
    win.show()
    wait_for_model(qtbot, win)
    with qtbot.waitSignal(ctl.state_changed):
        assert win.start_session()
    session = open_streams(fake_sd)
    assert len(session) == 1
    win.hide()
    assert open_streams(fake_sd) == session and not win.meters.timer.isActive()
    win.show()
    assert open_streams(fake_sd) == session and win.meters.timer.isActive()
    win.hide()
    with qtbot.waitSignal(ctl.session_finished, timeout=10000):
        ctl.stop()
    assert open_streams(fake_sd) == []  # the session ended out of sight: no preview opens
    win.show()
    qtbot.waitUntil(lambda: len(open_streams(fake_sd)) == 1)
    assert open_streams(fake_sd) != session
