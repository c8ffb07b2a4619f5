"""The controller's view of falling behind: live lag while the engine is busy, gaps in the transcript."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from captionist.audio.devices import Source
from captionist.pipeline.controller import SessionConfig, SessionController, SessionResult
from captionist.pipeline.events import CaptionUpdate, WorkerStats
from captionist.pipeline.lag import LagState
from tests.conftest import speech_like
from tests.fakes.fake_engine import FakeModel
from tests.fakes.fake_sounddevice import FakeSoundDevice
from tests.fakes.slow_engine import BlockingModel

SRC = Source("0", "Mic", "input", "ALSA", 1, 16000, open_device=0)


class ScriptedCapture:
    """A started capture that hands out prepared chunks once, then nothing until stopped."""

    def __init__(self, chunks: list[np.ndarray]) -> None:
        self.chunks = list(chunks)
        self.sources = [SRC]
        self.running = False

    def start(self) -> None:
        self.running = True

    def stop(self) -> None:
        self.running = False

    def read(self, timeout: float = 0.0) -> np.ndarray | None:
        return self.chunks.pop(0) if self.chunks else None

    def poll_events(self) -> list[str]:
        return []

    def levels(self) -> dict[str, float]:
        return {}

    def silent_seconds(self, source_id: str) -> float:
        return 0.0


def test_dropped_audio_is_a_marked_gap_in_the_transcript_and_the_captions(qtbot, tmp_path) -> None:
    speech = speech_like(16000, [(10.0, True)])  # 10 s at once: far more than max_lag_ms waiting
    ctl = SessionController(
        model_loader=lambda p, b: FakeModel(), capture_factory=lambda sources: ScriptedCapture([speech])
    )
    captions: list[CaptionUpdate] = []
    stats: list[WorkerStats] = []
    results: list[SessionResult] = []
    ctl.caption.connect(captions.append)
    ctl.stats.connect(stats.append)
    ctl.session_finished.connect(results.append)
    assert ctl.start(SessionConfig(Path("m.gguf"), [SRC], 480, tmp_path, fmt="txt", token_ms=80))
    qtbot.waitUntil(lambda: any(c.gap is not None for c in captions), timeout=10000)
    with qtbot.waitSignal(ctl.session_finished, timeout=10000):
        ctl.stop()
    summary = results[0].summary
    assert summary.dropped_ms == 9000 and [(g.start_ms, g.end_ms) for g in summary.gaps] == [(0, 9000)]
    marks = [c for c in captions if c.gap is not None]
    assert [c.new_lines() for c in marks] == [
        ["", "[9.0 s of audio not transcribed: transcription fell behind]", ""]
    ]
    # the mark covers the dropped stretch; the kept last second follows, on the session clock (the
    # fake names words by the stream's own frame)
    assert results[0].transcript.read_text(encoding="utf-8").splitlines() == [
        "[00:00:00.000 --> 00:00:09.000] [9.0 s of audio not transcribed: transcription fell behind]",
        "[00:00:09.000 --> 00:00:10.040] " + " ".join(f"w{i}" for i in range(13)),
    ]
    shed = [s for s in stats if s.lag_state == LagState.SHEDDING]
    assert shed and shed[-1].dropped_ms == 9000


def test_status_figures_keep_moving_while_the_engine_is_blocked(qtbot, fake_sd: FakeSoundDevice) -> None:
    fake_sd.add_device("Mic", rate=16000, channels=1)
    model = BlockingModel()
    ctl = SessionController(sd=fake_sd, model_loader=lambda p, b: model)
    stats: list[WorkerStats] = []
    ctl.stats.connect(stats.append)
    assert ctl.start(SessionConfig(Path("m.gguf"), [SRC], 480, None, token_ms=80))
    device = fake_sd.streams[-1]
    assert device.done.wait(5)
    device.push(np.zeros(16000, np.float32))
    assert model.entered.wait(10)  # the worker is inside feed and stays there
    device.push(np.zeros(2 * 16000, np.float32))
    # 3 s captured, none decoded: the status bar says so without a word from the worker
    qtbot.waitUntil(lambda: bool(stats) and stats[-1].lag_ms == 3000, timeout=5000)
    assert stats[-1].backlog_ms == 2040  # all but the 960 ms inside the engine
    model.release()
    with qtbot.waitSignal(ctl.session_finished, timeout=10000):
        ctl.stop()
    assert stats[-1].lag_ms == 0 and stats[-1].dropped_ms == 0
