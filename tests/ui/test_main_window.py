from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile
import soxr
from PySide6.QtCore import Qt

from captionist.audio.devices import list_sources
from captionist.engine import DELAY_CHOICES_MS
from captionist.models import ModelStore
from captionist.pipeline.controller import SessionController
from captionist.settings import OverlaySettings, Settings
from captionist.ui.main_window import MainWindow
from captionist.ui.overlay import CaptionOverlay
from tests.fakes.fake_engine import FakeModel, expected_words
from tests.fakes.fake_sounddevice import FakeSoundDevice


@pytest.fixture
def app_parts(qtbot, fake_sd: FakeSoundDevice, wav_48k: Path, tmp_path: Path):
    audio, rate = soundfile.read(wav_48k, dtype="float32")
    fake_sd.add_device("USB Mic", rate=rate, channels=2, audio=audio, default=True)
    model_file = tmp_path / "models" / "voxtral-q4.gguf"
    model_file.parent.mkdir()
    model_file.write_bytes(b"GGUF" + bytes(100))
    model = FakeModel()
    controller = SessionController(sd=fake_sd, model_loader=lambda p, b: model)
    settings = Settings(transcript_dir=str(tmp_path / "transcripts"))
    overlay = CaptionOverlay(OverlaySettings())
    qtbot.addWidget(overlay)
    win = MainWindow(
        controller,
        settings,
        overlay=overlay,
        list_sources=lambda: list_sources(fake_sd, pactl=None),
        model_store=ModelStore(model_file.parent, demo=tmp_path / "none.gguf"),
    )
    qtbot.addWidget(win)
    want = expected_words(soxr.resample(audio[:, 0], rate, 16000).astype(np.float32))
    return win, controller, model, fake_sd, want


def test_slider_maps_every_position_to_delay_tokens(app_parts, qtbot) -> None:
    win = app_parts[0]
    seen = []
    for index in range(win.delay.slider.maximum() + 1):
        with qtbot.waitSignal(win.delay.delay_changed) as blocker:
            win.delay.slider.setValue(index)
        seen.append(blocker.args[0])
        assert win.delay.delay_tokens() * 80 == blocker.args[0]
        assert win.delay.label.text().startswith(f"{blocker.args[0]} ms")
    assert tuple(seen) == DELAY_CHOICES_MS and seen[-1] == 2400 and seen[-2] == 1200
    assert win.settings.delay_ms == 2400


def _run_once(win: MainWindow, controller: SessionController, fake_sd: FakeSoundDevice, qtbot) -> None:
    with qtbot.waitSignal(controller.state_changed):
        qtbot.mouseClick(win.start_button, Qt.MouseButton.LeftButton)
    assert win.start_button.text() == "Stop" and not win.sources.isEnabled()
    assert fake_sd.streams[-1].done.wait(5)
    with qtbot.waitSignal(controller.session_finished, timeout=10000):
        qtbot.mouseClick(win.start_button, Qt.MouseButton.LeftButton)
    assert win.start_button.text() == "Start" and win.sources.isEnabled()


def test_start_stop_restart_shows_transcript_and_overlay(app_parts, qtbot) -> None:
    win, controller, model, fake_sd, want = app_parts
    assert [s.name for s in win.sources.selected()] == ["USB Mic"]
    assert win.selected_model().name == "voxtral-q4.gguf"
    _run_once(win, controller, fake_sd, qtbot)
    body = [line for line in win.transcript.plain_text().splitlines() if not line.startswith("—")]
    assert " ".join(body).split() == want
    assert (
        " ".join(win.overlay.visible_lines()).split()
        == want[-len(" ".join(win.overlay.visible_lines()).split()) :]
    )
    assert win.rtf_label.text().startswith("RTF") and win.backend_label.text() == "backend: fake-cpu"
    _run_once(win, controller, fake_sd, qtbot)
    assert win.transcript.plain_text().count("— USB Mic —") == 2
    assert model.finishes == 2
    assert win.transcript.find(want[-1]) and win.transcript.text.textCursor().selectedText() == want[-1]
    assert not win.transcript.find("not-there")
    assert win.statusBar().currentMessage().startswith("Transcript saved to")


def test_delay_change_applies_live(app_parts, qtbot) -> None:
    win, controller, model, fake_sd, _ = app_parts
    fake_sd.devices[0].audio = None  # a live device with nothing replayed: the session stays open
    with qtbot.waitSignal(controller.state_changed):
        win.start_session()
    with qtbot.waitSignal(controller.notice, timeout=5000) as blocker:
        win.delay.slider.setValue(DELAY_CHOICES_MS.index(960))
    assert blocker.args == ["delay set to 960 ms"] and model.resets == [960]
    with qtbot.waitSignal(controller.session_finished, timeout=10000):
        controller.stop()


def test_errors_are_shown_in_the_banner(app_parts, qtbot) -> None:
    win, controller, _, fake_sd, _ = app_parts
    fake_sd.devices[0].present = False
    assert not win.start_session()
    assert not win.error_banner.isHidden()
    assert win.error_banner.text() == "cannot open 'USB Mic': Device unavailable: USB Mic"
    assert controller.state == "idle" and win.start_button.text() == "Start"
    for i in range(win.sources.list.count()):
        win.sources.list.item(i).setCheckState(Qt.CheckState.Unchecked)
    assert win.settings.sources == []
    assert not win.start_session()
    assert win.error_banner.text().splitlines() == [
        "cannot open 'USB Mic': Device unavailable: USB Mic",
        "Tick at least one audio source.",
    ]


def test_import_rejects_non_gguf_and_accepts_gguf(app_parts, tmp_path) -> None:
    win = app_parts[0]
    bad = tmp_path / "notes.gguf"
    bad.write_text("hello")
    assert not win.import_model(bad)
    assert win.error_banner.text() == f"{bad} is not a GGUF model file"
    good = tmp_path / "other.gguf"
    good.write_bytes(b"GGUF" + bytes(8))
    assert win.import_model(good)
    assert win.selected_model().name == "other.gguf" and win.settings.model_path.endswith("other.gguf")
    assert win.model_combo.count() == 2


def test_no_model_guides_the_user(qtbot, fake_sd, tmp_path) -> None:
    fake_sd.add_device("Mic", rate=16000, default=True)
    ctl = SessionController(sd=fake_sd, model_loader=lambda p, b: FakeModel())
    win = MainWindow(
        ctl,
        Settings(),
        list_sources=lambda: list_sources(fake_sd, pactl=None),
        model_store=ModelStore(tmp_path / "empty", demo=tmp_path / "none.gguf"),
    )
    qtbot.addWidget(win)
    assert win.error_banner.text().startswith("No speech model yet")
    assert not win.start_session()
    assert win.error_banner.text().splitlines()[-1] == "Choose a model first (Import GGUF…)."
    assert len(win.error_banner.text().splitlines()) == 2  # distinct messages stack


def test_finished_session_can_be_exported_in_another_format(app_parts, qtbot, tmp_path) -> None:
    from captionist.transcript import parse

    win, controller, _, fake_sd, want = app_parts
    assert not win.export_button.isEnabled()
    _run_once(win, controller, fake_sd, qtbot)
    assert win.export_button.isEnabled() and win.last_transcript.suffix == ".txt"
    dest = tmp_path / "again.srt"
    assert win.export_last(dest)
    assert " ".join(c.text for c in parse("srt", dest.read_text())).split() == want
    assert not win.export_last(tmp_path / "again.docx")
    assert "docx" in win.error_banner.text()


def test_idle_meters_come_from_a_preview_closed_during_sessions(qtbot, fake_sd, tmp_path) -> None:
    from captionist.audio.capture import Capture
    from captionist.ui.level_preview import LevelPreview
    from tests.conftest import speech_like

    fake_sd.add_device("Mic", rate=16000, default=True)
    model_file = tmp_path / "models" / "m.gguf"
    model_file.parent.mkdir()
    model_file.write_bytes(b"GGUF")
    ctl = SessionController(sd=fake_sd, model_loader=lambda p, b: FakeModel())
    win = MainWindow(
        ctl,
        Settings(transcript_dir=str(tmp_path / "t")),
        list_sources=lambda: list_sources(fake_sd, pactl=None),
        model_store=ModelStore(model_file.parent, demo=tmp_path / "none.gguf"),
        preview=LevelPreview(lambda chosen: Capture(chosen, sd=fake_sd)),
    )
    qtbot.addWidget(win)
    preview_stream = fake_sd.streams[-1]
    assert preview_stream.active
    preview_stream.push(speech_like(16000, [(0.2, True)], amp=0.5))
    qtbot.waitUntil(lambda: win.sources.meters["0"].value() > 50, timeout=3000)
    with qtbot.waitSignal(ctl.state_changed):
        win.start_session()
    assert preview_stream.closed and fake_sd.streams[-1] is not preview_stream
    with qtbot.waitSignal(ctl.session_finished, timeout=10000):
        ctl.stop()
    assert fake_sd.streams[-1].active  # metering again
