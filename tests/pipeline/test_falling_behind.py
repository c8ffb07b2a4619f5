"""The worker with an engine too slow for real time: it warns, slows down, and sheds only as a last
resort, marking every dropped stretch. Runs on a simulated clock (tests.fakes.slow_engine), so every
figure below is exact and the same on any machine.

Measured here (60 s of speech, 2 s bursts and 0.4 s pauses; engine cost per second of audio
0.55 s + 0.15 s per latency-sized chunk, i.e. RTF 1.18 at 240 ms, 0.86 at 480 ms, 0.71 at 960 ms;
chosen latency 240 ms; default thresholds slow 1.5 s / warn 2.5 s / shed 4 s of backlog):

* shedding only (the old behaviour): about 6.3 s of audio dropped in two gaps, lag up to ~4.4 s;
* slowing down first (the default): the stream moves to 480 ms when the backlog passes 1.5 s,
  returns to 240 ms after 30 s of keeping up and moves up again when that does not hold:
  nothing dropped, every word transcribed, lag at most ~2.1 s.
"""

from __future__ import annotations

import threading

import numpy as np
from PySide6.QtCore import QObject, Slot

from captionist.pipeline.events import CaptionUpdate, SessionSummary, WorkerStats
from captionist.pipeline.lag import LagMeter, LagState
from captionist.pipeline.worker import InferenceWorker, LoadPolicy, WorkerControl
from tests.conftest import speech_like
from tests.fakes.fake_engine import FakeModel, expected_words
from tests.fakes.slow_engine import BlockingModel, RealTimeSource, SimClock, SlowModel
from tests.pipeline.test_worker import Run

SPEECH = speech_like(16000, [(2.0, True), (0.4, False)] * 25)


class Record(QObject):
    """Everything the worker said, in order (signals are direct: the worker runs on this thread)."""

    def __init__(self, worker: InferenceWorker, clock: SimClock) -> None:
        super().__init__()
        self.clock = clock
        self.events: list[object] = []
        self.times: list[float] = []  # the simulated time of each event
        self.summary: SessionSummary | None = None
        for signal in (worker.caption, worker.stats, worker.notice):
            signal.connect(self.on_event)
        worker.finished.connect(self.on_finished)

    @Slot(object)
    def on_event(self, e: object) -> None:
        self.events.append(e)
        self.times.append(self.clock.now)

    @Slot(object)
    def on_finished(self, s: SessionSummary) -> None:
        self.summary = s

    def of(self, kind: type) -> list:
        return [e for e in self.events if isinstance(e, kind)]


def _simulate(slow_down: bool) -> tuple[Record, FakeModel]:
    clock, control = SimClock(), WorkerControl()
    inner = FakeModel(latencies_ms=(240, 480, 960), default_latency_ms=240)
    model = SlowModel(inner, clock, per_second_s=0.55, per_chunk_s=0.15)
    assert round(model.rtf(240), 3) == 1.175 and model.rtf(480) < 1  # too slow at the chosen latency
    policy = LoadPolicy(keep_ms=960, slow_down=slow_down)  # keep whole 80 ms frames of the fake
    worker = InferenceWorker(
        lambda: model, RealTimeSource(SPEECH, clock, control), control, 240, policy, clock=clock
    )
    record = Record(worker, clock)
    worker.run()
    assert record.summary is not None and record.summary.error is None
    return record, inner


def _spoken_frames(summary_text: str) -> list[int]:
    return [int(w[1:]) for w in summary_text.split()]


def test_shedding_only_warns_first_and_marks_every_dropped_stretch() -> None:
    record, inner = _simulate(slow_down=False)
    summary = record.summary
    gaps = [u.gap for u in record.of(CaptionUpdate) if u.gap is not None]
    assert len(gaps) >= 1 and tuple(gaps) == summary.gaps
    assert summary.dropped_ms == sum(g.end_ms - g.start_ms for g in gaps) > 0
    assert set(inner.latency_changes) == {240}  # segments closed at each gap; the latency never moved
    # every word outside the gaps is there, at its own time on the session clock
    want = [int(w[1:]) for w in expected_words(SPEECH)]
    kept = [f for f in want if not any(g.start_ms <= f * 80 < g.end_ms for g in gaps)]
    times = [t.time_ms // 80 for u in record.of(CaptionUpdate) for t in u.new_tokens]
    assert times == kept and len(kept) < len(want)
    # a warning with a countdown came before the first drop, and the drop was then shown and said
    first_gap = next(i for i, e in enumerate(record.events) if isinstance(e, CaptionUpdate) and e.gap)
    warned = [
        e for e in record.events[:first_gap] if isinstance(e, WorkerStats) and e.lag_state == LagState.WARNING
    ]
    assert warned and any(s.shed_in_s is not None and s.shed_in_s > 0 for s in warned)
    # the countdown is right to within a second (here ~8.8 s announced, ~8.6 s taken)
    i = next(i for i, e in enumerate(record.events) if e in warned and e.shed_in_s is not None)
    assert abs(record.times[first_gap] - record.times[i] - record.events[i].shed_in_s) < 1.0
    after = [e for e in record.events[first_gap:] if isinstance(e, WorkerStats)]
    assert after[0].lag_state == LagState.SHEDDING and after[0].dropped_ms > 0
    assert f"transcription fell behind: skipped {gaps[0].seconds:.1f} s of audio" in record.of(str)
    assert gaps[0].label() == f"[{gaps[0].seconds:.1f} s of audio not transcribed: transcription fell behind]"


def test_slowing_down_keeps_up_without_dropping_anything() -> None:
    record, inner = _simulate(slow_down=True)
    summary = record.summary
    assert summary.dropped_ms == 0 and summary.gaps == ()
    assert _spoken_frames(summary.text) == [int(w[1:]) for w in expected_words(SPEECH)]
    assert inner.latency_changes[0] == 480  # the next choice at least twice as large
    assert "transcription is falling behind: latency raised to 480 ms to keep up" in record.of(str)
    stats = record.of(WorkerStats)
    assert max(s.lag_ms for s in stats) < LoadPolicy().max_lag_ms
    assert LagState.CATCHING_UP in {s.lag_state for s in stats}
    assert {s.lag_state for s in stats} <= {LagState.OK, LagState.CATCHING_UP}  # never warned, never shed
    assert all(s.chosen_latency_ms == 240 for s in stats)


class GrowingSource:
    """A capture the test fills by hand; ``captured_samples`` counts what it was given."""

    def __init__(self, control: WorkerControl) -> None:
        self.control = control
        self.pending: list[np.ndarray] = []
        self.captured = 0
        self.lock = threading.Lock()

    def add(self, pcm: np.ndarray) -> None:
        with self.lock:
            self.pending.append(pcm)
            self.captured += pcm.size

    def captured_samples(self) -> int:
        return self.captured

    def read(self, timeout: float = 0.0) -> np.ndarray | None:
        with self.lock:
            if not self.pending:
                return None
            pcm, self.pending = np.concatenate(self.pending), []
            return pcm

    def poll_events(self) -> list[str]:
        return []


def test_lag_grows_while_the_worker_is_blocked_in_the_engine(qtbot) -> None:
    control = WorkerControl()
    model = BlockingModel()
    source = GrowingSource(control)
    run = Run(qtbot, model, source, control, policy=LoadPolicy(slow_down=False))
    source.add(np.zeros(16000, np.float32))
    run.thread.start()
    assert model.entered.wait(10)  # inside feed with 960 ms of the first second
    meter = LagMeter(LoadPolicy(), source.captured_samples, lambda: run.worker.ledger)
    assert (meter.read().lag_ms, meter.read().backlog_ms) == (1000, 40)
    source.add(np.zeros(2 * 16000, np.float32))  # two more seconds arrive; the worker cannot look
    r = meter.read()
    assert (r.lag_ms, r.backlog_ms) == (3000, 2040)
    model.release()
    control.stop.set()
    qtbot.waitUntil(lambda: run.summary is not None, timeout=10000)
    assert run.thread.wait(5000)
    assert meter.read().lag_ms == 0 and run.summary.dropped_ms == 0
