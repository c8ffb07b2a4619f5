"""The worker when every audio source was gone for a while (``Capture.poll_outages``): the stretch
is a gap of its own in the session, the words after it keep the real session time, and nothing
captured on either side is lost or moved across it."""

from __future__ import annotations

import threading

import numpy as np

from captionist.audio.capture import Capture, Outage, OutageKind
from captionist.audio.devices import Source
from captionist.pipeline.events import AudioGap, GapReason
from captionist.pipeline.worker import LoadPolicy, WorkerControl
from tests.conftest import speech_like
from tests.fakes.fake_engine import FakeModel, expected_words
from tests.pipeline.test_worker import ListSource, Run


class OutageSource(ListSource):
    """A ``ListSource`` that reports ``outages[k]`` after its k-th read (1-based)."""

    def __init__(self, chunks: list[np.ndarray], control: WorkerControl, outages: dict[int, list[Outage]]):
        super().__init__(chunks, control)
        self.outages = outages

    def poll_outages(self) -> list[Outage]:
        return self.outages.pop(self.reads, [])


def _token_times(run: Run) -> list[int]:
    return [t.time_ms for c in run.captions for t in c.new_tokens]


def test_an_outage_is_a_gap_and_the_words_after_it_keep_the_session_clock(qtbot) -> None:
    first = speech_like(16000, [(2.0, True)])
    second = speech_like(16000, [(1.0, True), (1.0, False)])
    control = WorkerControl()
    model = FakeModel()
    # 5 s with no device between the two: reported along with the audio after it (as Capture does),
    # while the first 2 s may still wait in the backlog (feeds of at most 960 ms)
    source = OutageSource([first, second], control, {2: [Outage(at=first.size, samples=5 * 16000)]})
    run = Run(qtbot, model, source, control, policy=LoadPolicy(max_feed_ms=960))
    summary = run.wait()

    gap = AudioGap(2000, 7000, GapReason.SOURCE_LOST)
    assert list(summary.gaps) == [gap] and summary.dropped_ms == 0
    assert summary.text.split() == expected_words(np.concatenate([first, second]))  # nothing lost
    assert model.fed_samples == first.size + second.size
    at = next(i for i, c in enumerate(run.captions) if c.gap is not None)
    before = [t.time_ms for c in run.captions[:at] for t in c.new_tokens]
    after = [t.time_ms for c in run.captions[at + 1 :] for t in c.new_tokens]
    assert before == list(range(0, 2000, 80))  # every word of the first 2 s comes out before the mark
    assert after == list(range(7000, 8000, 80))  # stream time 2000.. plus the 5 s without audio
    assert run.captions[at].new_lines() == ["", gap.label(), ""]
    assert gap.label() == "[5.0 s of audio not transcribed: the audio source was lost]"
    assert run.stats[-1].dropped_ms == 0  # an outage dropped nothing


def test_an_outage_at_the_very_start_and_one_still_open_at_stop(qtbot) -> None:
    pcm = speech_like(16000, [(1.0, True)])
    control = WorkerControl()
    outages = {1: [Outage(at=0, samples=8000)], 2: [Outage(at=pcm.size, samples=24000)]}
    run = Run(qtbot, FakeModel(), OutageSource([pcm], control, outages), control)
    summary = run.wait()
    assert list(summary.gaps) == [
        AudioGap(0, 500, GapReason.SOURCE_LOST),
        AudioGap(1500, 3000, GapReason.SOURCE_LOST),
    ]
    assert _token_times(run) == list(range(500, 1500, 80))
    assert run.captions[-1].final and summary.text.split() == expected_words(pcm)


def test_shedding_never_crosses_an_outage(qtbot) -> None:
    # 10 s arrive at once with a 3 s outage after the first 5 s; the policy keeps 1 s of a backlog
    # over 4 s: the shed stops at the outage, the outage is marked, then the rest is shed
    pcm = speech_like(16000, [(10.0, True)])
    control = WorkerControl()
    model = FakeModel()
    source = OutageSource([pcm], control, {1: [Outage(at=5 * 16000, samples=3 * 16000)]})
    run = Run(qtbot, model, source, control, policy=LoadPolicy(max_lag_ms=4000, keep_ms=1000))
    summary = run.wait()
    assert list(summary.gaps) == [
        AudioGap(0, 5000, GapReason.FELL_BEHIND),
        AudioGap(5000, 8000, GapReason.SOURCE_LOST),
        AudioGap(8000, 12000, GapReason.FELL_BEHIND),
    ]
    assert [c.gap for c in run.captions if c.gap is not None] == list(summary.gaps)
    assert summary.dropped_ms == 9000 and model.fed_samples == 16000
    assert _token_times(run) == list(range(12000, 13000, 80))  # the kept last second, on the session clock


def test_a_dropped_stretch_is_not_fed_and_is_marked_where_it_was(qtbot) -> None:
    # A full capture queue turned 1 s away; the capture returns silence in its place and says so.
    first = speech_like(16000, [(2.0, True)])
    after = speech_like(16000, [(1.0, True)])
    silence = np.zeros(16000, np.float32)
    for split in (False, True):  # the silence in one read, or spread over two
        control = WorkerControl()
        model = FakeModel()
        if split:
            chunks = [np.concatenate([first, silence[:8000]]), np.concatenate([silence[8000:], after])]
        else:
            chunks = [first, np.concatenate([silence, after])]
        outage = Outage(at=first.size, samples=silence.size, kind=OutageKind.DROPPED)
        source = OutageSource(chunks, control, {1 if split else 2: [outage]})
        run = Run(qtbot, model, source, control, policy=LoadPolicy(max_feed_ms=960))
        summary = run.wait()

        gap = AudioGap(2000, 3000, GapReason.QUEUE_OVERFLOWED)
        assert list(summary.gaps) == [gap], split
        assert model.fed_samples == first.size + after.size  # not one sample of the stand-in silence
        assert summary.text.split() == expected_words(np.concatenate([first, after]))
        at = next(i for i, c in enumerate(run.captions) if c.gap is not None)
        times_before = [t.time_ms for c in run.captions[:at] for t in c.new_tokens]
        times_after = [t.time_ms for c in run.captions[at + 1 :] for t in c.new_tokens]
        assert times_before == list(range(0, 2000, 80)) and times_after == list(range(3000, 4000, 80))
        assert gap.label() == "[1.0 s of audio not transcribed: the audio queue overflowed]"
        assert "1.0 s of audio were lost: the audio queue overflowed" in run.notices
        assert summary.dropped_ms == 1000 and run.stats[-1].dropped_ms == 1000  # lost audio is counted


def test_a_dropped_stretch_cut_short_by_the_end_of_the_audio(qtbot) -> None:
    # the source ends with only half the stretch returned: what is there is dropped, nothing hangs
    pcm = speech_like(16000, [(1.0, True)])
    control = WorkerControl()
    model = FakeModel()
    outage = Outage(at=pcm.size, samples=16000, kind=OutageKind.DROPPED)
    source = OutageSource([np.concatenate([pcm, np.zeros(8000, np.float32)])], control, {1: [outage]})
    summary = Run(qtbot, model, source, control).wait()
    assert list(summary.gaps) == [AudioGap(1000, 1500, GapReason.QUEUE_OVERFLOWED)]
    assert model.fed_samples == pcm.size and summary.text.split() == expected_words(pcm)


class GatedModel(FakeModel):
    """A model whose ``stream`` waits for ``gate``: the worker is stalled as while a model loads."""

    def __init__(self, gate: threading.Event) -> None:
        super().__init__()
        self.gate = gate

    def stream(self, *args, **kwargs):  # noqa: ANN002, ANN003, ANN201 - FakeModel.stream's signature
        assert self.gate.wait(10)
        return super().stream(*args, **kwargs)


def test_audio_that_overflowed_the_capture_queue_while_the_worker_stalled(qtbot, fake_sd) -> None:
    # The real capture (its bounded queue holds 0.2 s here) and a worker stalled before its first
    # read: of the first second only 0.2 s survives; the rest becomes a marked gap, and what is
    # said after it lands at its real time
    fake_sd.add_device("Mic", rate=16000, channels=1)
    cap = Capture([Source("0", "Mic", "input", "ALSA", 1, 16000, open_device=0)], sd=fake_sd,
                  queue_seconds=0.2, block_ms=20)  # fmt: skip
    cap.start()
    device = fake_sd.streams[-1]
    control, gate = WorkerControl(), threading.Event()
    model = GatedModel(gate)
    run = Run(qtbot, model, cap, control, policy=LoadPolicy(max_feed_ms=960))
    block = speech_like(16000, [(0.02, True)])

    def speak() -> None:
        for _ in range(50):  # 1 s while the worker waits: 10 blocks fit, 40 are turned away
            device.push(block)
        assert cap.overruns() == 40
        gate.set()
        qtbot.waitUntil(lambda: run.worker.ledger.received >= 10 * 320, timeout=5000)  # the queue read
        for group in range(1, 6):  # 0.5 s more, at a pace the worker keeps up with
            for _ in range(5):
                device.push(block)
            want = (50 + 5 * group) * 320
            qtbot.waitUntil(lambda want=want: run.worker.ledger.received >= want, timeout=5000)
        cap.stop()
        control.stop.set()

    summary = run.wait(speak)
    assert list(summary.gaps) == [AudioGap(200, 1000, GapReason.QUEUE_OVERFLOWED)]
    assert model.fed_samples == (10 + 25) * 320 and summary.audio_ms == 1500
    at = next(i for i, c in enumerate(run.captions) if c.gap is not None)
    assert all(t.time_ms < 200 for c in run.captions[:at] for t in c.new_tokens)
    after = [t.time_ms for c in run.captions[at + 1 :] for t in c.new_tokens]
    # the real time of the later words (the fake engine stamps tokens on an 80 ms grid)
    assert after and 1000 <= after[0] < 1080 and after[-1] < 1500 + 80
