"""The worker when every audio source was gone for a while (``Capture.poll_outages``): the stretch
is a gap of its own in the session, the words after it keep the real session time, and nothing
captured on either side is lost or moved across it."""

from __future__ import annotations

import numpy as np

from captionist.audio.capture import Outage
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
