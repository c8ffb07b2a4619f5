from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import soundfile
import soxr
from PySide6.QtCore import QObject, QThread, Slot

from captionist.audio.capture import Capture
from captionist.audio.devices import Source
from captionist.pipeline.events import AudioGap, CaptionUpdate, GapReason, SessionSummary, WorkerStats
from captionist.pipeline.worker import InferenceWorker, LoadPolicy, WorkerControl
from tests.conftest import speech_like
from tests.fakes.fake_engine import FakeModel, expected_words
from tests.fakes.fake_sounddevice import FakeSoundDevice


class ListSource:
    """Hands out prepared chunks, then behaves like a stopped capture (sets stop, returns None)."""

    def __init__(
        self, chunks: list[np.ndarray], control: WorkerControl, on_read: Callable[[int], None] = None
    ):
        self.chunks, self.control, self.on_read, self.reads = list(chunks), control, on_read, 0

    def read(self, timeout: float = 0.0) -> np.ndarray | None:
        self.reads += 1
        if self.on_read:
            self.on_read(self.reads)
        if self.chunks:
            return self.chunks.pop(0)
        self.control.stop.set()
        return None

    def poll_events(self) -> list[str]:
        return []


class Run(QObject):
    """Receives the worker's signals on the GUI thread (queued), like the controller does."""

    def __init__(self, qtbot, model, source, control, latency_ms=480, policy=None, language=None):
        super().__init__()
        self.worker = InferenceWorker(lambda: model, source, control, latency_ms, policy, language=language)
        self.thread = QThread()
        self.worker.moveToThread(self.thread)
        self.thread.started.connect(self.worker.run)
        self.worker.finished.connect(self.thread.quit)
        self.captions: list[CaptionUpdate] = []
        self.stats: list[WorkerStats] = []
        self.notices: list[str] = []
        self.errors: list[str] = []
        self.summary: SessionSummary | None = None
        self.worker.caption.connect(self.on_caption)
        self.worker.stats.connect(self.on_stats)
        self.worker.notice.connect(self.on_notice)
        self.worker.error.connect(self.on_error)
        self.worker.finished.connect(self.on_finished)
        self.qtbot = qtbot

    @Slot(object)
    def on_caption(self, u: CaptionUpdate) -> None:
        self.captions.append(u)

    @Slot(object)
    def on_stats(self, s: WorkerStats) -> None:
        self.stats.append(s)

    @Slot(str)
    def on_notice(self, m: str) -> None:
        self.notices.append(m)

    @Slot(str)
    def on_error(self, m: str) -> None:
        self.errors.append(m)

    @Slot(object)
    def on_finished(self, s: SessionSummary) -> None:
        self.summary = s

    def wait(self, before: Callable[[], None] | None = None) -> SessionSummary:
        self.thread.start()
        if before:
            before()
        self.qtbot.waitUntil(lambda: self.summary is not None, timeout=10000)
        assert self.thread.wait(5000)
        return self.summary


def _words(text: str) -> list[str]:
    return text.split()


def test_lifecycle_with_wav_replayed_through_capture(qtbot, fake_sd: FakeSoundDevice, wav_48k: Path) -> None:
    audio, rate = soundfile.read(wav_48k, dtype="float32")
    fake_sd.add_device("Mic", rate=rate, channels=2, audio=audio)
    cap = Capture([Source("0", "Mic", "input", "ALSA", 2, rate, open_device=0)], sd=fake_sd)
    cap.start()
    control = WorkerControl()
    model = FakeModel()
    run = Run(qtbot, model, cap, control)

    def stop_after_replay() -> None:
        assert fake_sd.streams[-1].done.wait(5)
        cap.stop()
        control.stop.set()

    summary = run.wait(stop_after_replay)
    want = expected_words(soxr.resample(audio[:, 0], 48000, 16000).astype(np.float32))
    assert _words(summary.text) == want and summary.error is None
    assert run.captions[-1].final and run.captions[-1].text == summary.text
    growing = [c.revision for c in run.captions if c.new_text]
    assert growing == list(range(1, len(growing) + 1))
    assert model.finishes == 1 and run.errors == []
    assert run.stats[-1].backend == "fake-cpu" and run.stats[-1].audio_ms == summary.audio_ms


def test_stop_drains_everything_queued_without_shedding(qtbot) -> None:
    pcm = speech_like(16000, [(3.0, True), (2.0, False), (5.0, True)])
    control = WorkerControl()
    control.stop.set()  # Stop already pressed: all 10 s must still be transcribed
    model = FakeModel(slowdown=0.0)
    summary = Run(qtbot, model, ListSource([pcm], control), control).wait()
    assert _words(summary.text) == expected_words(pcm)
    assert summary.dropped_ms == 0 and model.fed_samples == pcm.size


def test_load_shedding_drops_oldest_audio_beyond_max_lag(qtbot) -> None:
    pcm = speech_like(16000, [(10.0, True)])
    control = WorkerControl()
    model = FakeModel()
    run = Run(
        qtbot, model, ListSource([pcm], control), control, policy=LoadPolicy(max_lag_ms=4000, keep_ms=1000)
    )
    summary = run.wait()
    assert summary.dropped_ms == 9000 and model.fed_samples == 16000
    assert run.notices == ["transcription fell behind: skipped 9.0 s of audio"]
    gaps = [c.gap for c in run.captions if c.gap is not None]
    assert gaps == list(summary.gaps) == [AudioGap(0, 9000, GapReason.FELL_BEHIND)]  # the oldest audio
    times = [t.time_ms for c in run.captions for t in c.new_tokens]
    assert times == list(range(9000, 10000, 80))  # kept audio stays on the session clock
    assert run.stats[-1].dropped_ms == 9000


def test_engine_error_reaches_ui_and_thread_ends(qtbot) -> None:
    control = WorkerControl()
    run = Run(
        qtbot, FakeModel(fail_after_feeds=1), ListSource([np.zeros(1600, np.float32)] * 5, control), control
    )
    summary = run.wait()
    assert run.errors == ["fake engine failure"] and summary.error == "fake engine failure"
    assert run.thread.isFinished()


def test_model_load_error_is_reported(qtbot) -> None:
    control = WorkerControl()

    def broken():
        raise RuntimeError("model file 'x.gguf' is not a GGUF file")

    worker = InferenceWorker(broken, ListSource([], control), control, 480)
    errors: list[str] = []
    worker.error.connect(errors.append)
    with qtbot.waitSignal(worker.finished):
        worker.run()
    assert errors == ["model file 'x.gguf' is not a GGUF file"]


def test_live_latency_change_keeps_committed_text(qtbot) -> None:
    pcm = speech_like(16000, [(0.8, True), (0.8, False), (0.8, True), (0.8, True)])
    chunks = [pcm[i : i + 12800] for i in range(0, pcm.size, 12800)]
    control = WorkerControl()
    model = FakeModel()
    source = ListSource(chunks, control, on_read=lambda n: control.request_latency(960) if n == 3 else None)
    run = Run(qtbot, model, source, control, latency_ms=240)
    summary = run.wait()
    assert model.latency_changes == [960] and len(model.streams) == 1  # the same stream, a new segment
    assert "latency set to 960 ms" in run.notices
    times = [t.time_ms for c in run.captions for t in c.new_tokens]
    voiced = [int(w[1:]) * 80 for w in expected_words(pcm)]
    assert times == voiced  # every voiced frame once, on the session clock, across both segments
    first = next(c.text for c in run.captions if c.revision and "w9" in c.text)
    assert summary.text.startswith(first)
    assert run.stats[-1].latency_ms == 960


def test_live_language_change_and_a_bad_choice(qtbot) -> None:
    pcm = speech_like(16000, [(0.8, True), (0.8, False), (0.8, True)])
    chunks = [pcm[i : i + 6400] for i in range(0, pcm.size, 6400)]
    control = WorkerControl()
    model = FakeModel(languages=("auto", "de", "de-DE", "fr"), default_language="auto")

    def switch(n: int) -> None:
        if n == 3:
            control.request_language("de")
        elif n == 4:
            control.request_language("xx")  # not offered: reported, the session goes on
        elif n == 5:
            control.request_latency(100)

    run = Run(qtbot, model, ListSource(chunks, control, on_read=switch), control, language=None)
    summary = run.wait()
    assert model.language_changes == ["de"] and "language set to de" in run.notices
    assert run.errors == [
        "unknown language 'xx'; choose one of auto, de, de-DE, fr",
        "latency 100 ms is not supported by this model; choose one of 240, 480, 960 ms",
    ]
    words = summary.text.split()
    assert words[0] == "w0" and words[-1].startswith("de-w")  # before and after the switch
    assert [w.split("-")[-1] for w in words] == expected_words(pcm)
    assert run.stats[-1].language == "de" and summary.error is None


def test_end_of_utterance_positions_reach_the_caption_updates(qtbot) -> None:
    pcm = speech_like(16000, [(0.4, True), (0.6, False), (0.4, True), (0.6, False)])
    # an <EOU> token of its own (FastConformer) or just an event (Voxtral); 960 ms feeds, or the
    # whole clip as one feed, so that the first end falls inside an update with words after it
    for eou_id, max_feed_ms in ((7, 960), (-1, 960), (7, 4000), (-1, 4000)):
        control = WorkerControl()
        model = FakeModel(eou_after_ms=320, eou_id=eou_id, latencies_ms=(80,), default_latency_ms=80)
        policy = LoadPolicy(max_feed_ms=max_feed_ms)
        run = Run(qtbot, model, ListSource([pcm], control), control, latency_ms=80, policy=policy)
        run.wait()
        ends = [(c, k) for c in run.captions for k in c.utterance_ends]
        assert len(ends) == 2 and all("end_of_utterance" in c.events for c, _ in ends)
        for (c, k), last_word in zip(ends, (" w4", " w17"), strict=True):
            if eou_id >= 0:
                assert c.new_tokens[k - 1].id == eou_id  # just after the <EOU> token
            words_before = [t.piece for t in c.new_tokens[:k] if not t.is_control]
            assert words_before[-1] == last_word
            assert [t.piece for t in c.new_tokens[k:] if not t.is_control][:1] in ([], [" w12"])
        if max_feed_ms == 4000:
            assert ends[0][1] < len(ends[0][0].new_tokens)  # words of the next utterance follow it
        shown = "".join("\n".join(c.new_lines()) for c in run.captions)  # as the views lay it out
        assert [line.split() for line in shown.split("\n")] == [
            [f"w{i}" for i in range(5)],
            [f"w{i}" for i in range(12, 18)],
            [],
        ]
