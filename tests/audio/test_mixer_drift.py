"""Two devices on clocks that differ: the source behind is stretched a little at a time, so the
lead never grows to the skew limit (half a second of silence mid-word, and lag), nothing is lost
and the output never runs ahead of what was sent (``captionist.audio.mixer``)."""

from __future__ import annotations

import numpy as np
import pytest

from captionist.audio.capture import Capture
from captionist.audio.devices import Source
from captionist.audio.mixer import DRIFT_MIN_MS, MAX_STRETCH, SAMPLE_RATE, Mixer, stretch
from tests.fakes.fake_sounddevice import FakeSoundDevice

STEP_S = 0.1  # the worker reads about this often
BLOCK_S = 0.02  # each device sends a block this often
TONE_HZ = 440.0


class Device:
    """A source sending a tone, or silence, at ``ppm`` off the nominal rate, from ``start_s``."""

    def __init__(self, ppm: float, start_s: float = 0.0, tone: bool = True) -> None:
        self.rate = SAMPLE_RATE * (1 + ppm * 1e-6)
        self.start_s, self.tone = start_s, tone
        self.sent = 0
        self._blocks = 0

    def blocks(self, t: float) -> list[np.ndarray]:
        """The blocks it has sent by time ``t`` and not yet handed over."""
        out = []
        while self.start_s + (self._blocks + 1) * BLOCK_S <= t + 1e-9:
            self._blocks += 1
            end = round(self._blocks * BLOCK_S * self.rate)
            i = np.arange(self.sent, end)
            pcm = 0.5 * np.sin(2 * np.pi * TONE_HZ * i / SAMPLE_RATE) if self.tone else np.zeros(i.size)
            out.append(pcm.astype(np.float32))
            self.sent = end
        return out


class Session:
    """Plays two devices into a mixer for ``seconds``, reading every ``STEP_S``."""

    def __init__(self, a: Device, b: Device, seconds: float) -> None:
        self.mixer = Mixer(["a", "b"])
        self.out: list[np.ndarray] = []
        self.lead: list[int] = []  # after each read: what was sent less what came out
        self.stretched: list[int] = []
        pulled = 0
        for step in range(1, round(seconds / STEP_S) + 1):
            for sid, dev in (("a", a), ("b", b)):
                for block in dev.blocks(step * STEP_S):
                    self.mixer.push(sid, block)
            pcm = self.mixer.pull()
            pulled += pcm.size
            self.out.append(pcm)
            self.lead.append(max(a.sent, b.sent) - pulled)
            self.stretched.append(self.mixer.stretched)

    def audio(self) -> np.ndarray:
        return np.concatenate(self.out)


def longest_hush(pcm: np.ndarray) -> int:
    """The longest run of samples at (near) zero: a tone has one at most at each zero crossing."""
    hush = np.concatenate([[0], (np.abs(pcm) < 1e-3).astype(np.int8), [0]])
    edges = np.flatnonzero(np.diff(hush))
    return int(np.max(edges[1::2] - edges[::2])) if edges.size else 0


def test_a_drifting_source_is_stretched_not_cut() -> None:
    # a microphone 1000 ppm fast beside the tone of the other device: over 10 minutes the tone
    # falls 0.6 s behind, past the 0.5 s skew limit that used to put silence into it
    session = Session(Device(ppm=1000, tone=False), Device(ppm=0), seconds=600)
    audio = session.audio()
    assert longest_hush(audio) <= 2  # no silence was put into the tone
    assert max(session.lead[600:]) <= 0.1 * SAMPLE_RATE  # after a minute, no lasting lag
    drift = 600 * 1000e-6 * SAMPLE_RATE
    assert session.mixer.stretched == pytest.approx(drift, abs=DRIFT_MIN_MS * 16 * 2)
    assert min(session.lead) >= 0  # never ahead of what was sent


def test_stretching_is_gentle() -> None:
    session = Session(Device(ppm=3000, tone=False), Device(ppm=0), seconds=300)
    per_second = np.diff(session.stretched[:: round(1 / STEP_S)])
    assert per_second.max() <= MAX_STRETCH * SAMPLE_RATE + 1 / BLOCK_S  # one sample a block rounding
    assert max(session.lead[600:]) <= 0.1 * SAMPLE_RATE  # and it still keeps up at 3000 ppm


def test_sources_on_one_clock_are_left_alone() -> None:
    # blocks reach the reader up to 60 ms late, at random: that is jitter, not drift
    rng = np.random.default_rng(0)
    blocks = round(600 / BLOCK_S)  # 10 minutes
    arrivals = {
        sid: np.maximum.accumulate(np.arange(1, blocks + 1) * BLOCK_S + rng.uniform(0, 0.06, blocks))
        for sid in ("a", "b")
    }
    mixer = Mixer(["a", "b"])
    taken = dict.fromkeys(arrivals, 0)
    for step in range(1, round(600 / STEP_S) + 1):
        for sid, times in arrivals.items():
            due = int(np.searchsorted(times, step * STEP_S, side="right"))
            for _ in range(due - taken[sid]):
                mixer.push(sid, np.full(320, 0.1, np.float32))
            taken[sid] = due
        mixer.pull()
    assert mixer.stretched == 0


def test_a_source_that_started_late_is_lined_up() -> None:
    # the second device opened 0.3 s after the first: its audio lines up with the first's after
    # a while, by stretching, and the lag that the wait for it made goes
    session = Session(Device(ppm=0, tone=False), Device(ppm=0, start_s=0.3), seconds=120)
    assert session.lead[100] >= 0.3 * SAMPLE_RATE
    assert max(session.lead[900:]) <= 0.05 * SAMPLE_RATE
    assert session.mixer.stretched == pytest.approx(0.3 * SAMPLE_RATE, abs=DRIFT_MIN_MS * 16)
    assert longest_hush(session.audio()[round(0.3 * SAMPLE_RATE) :]) <= 2


def test_a_stretch_never_runs_past_what_was_sent() -> None:
    # a stalled for a second (padded with silence), then sent 0.1 s of backlog and went on beside
    # b: a stays ahead, but only by the padding; stretching b to a would take the output past the
    # newest sample either device really sent, ahead of the captured audio (a lag below zero)
    mixer = Mixer(["a", "b"])
    mixer.push("b", np.full(16000, 0.1, np.float32))
    pulled = mixer.pull().size  # past the skew limit: a is padded by a second
    mixer.push("a", np.full(1600, 0.1, np.float32))
    sent = 16000
    for _ in range(1500):  # 30 s
        mixer.push("a", np.full(320, 0.1, np.float32))
        mixer.push("b", np.full(320, 0.1, np.float32))
        sent += 320
        pulled += mixer.pull().size
        assert pulled <= sent
    assert mixer.stretched == 0


def test_a_capture_of_two_drifting_devices_keeps_its_lag_true(fake_sd: FakeSoundDevice) -> None:
    # through the resampler: a 48 kHz loopback 500 ppm fast beside a 16 kHz microphone playing a
    # tone, 5 minutes; the lag (what was captured less what came out) stays small and never below 0
    fake_sd.add_device("Mic", rate=16000, channels=1)
    fake_sd.add_device("Monitor of speakers", rate=48000, channels=2)
    sources = [
        Source(id=str(i), name=d.name, kind="input", hostapi="ALSA", channels=d.channels,
               samplerate=d.rate, open_device=i)
        for i, d in enumerate(fake_sd.devices)
    ]  # fmt: skip
    cap = Capture(sources, sd=fake_sd)
    cap.start()
    mic_stream, out_stream = fake_sd.streams[-2], fake_sd.streams[-1]
    mic, speakers = Device(ppm=0), Device(ppm=500, tone=False)
    speakers.rate *= 3  # device frames
    out: list[np.ndarray] = []
    lags = []
    for step in range(1, round(300 / STEP_S) + 1):
        for block in mic.blocks(step * STEP_S):
            mic_stream.push(block)
        for block in speakers.blocks(step * STEP_S):
            out_stream.push(np.zeros((block.size, 2), np.float32))
        while (pcm := cap.read(0)) is not None:
            out.append(pcm)
        lags.append(cap.captured_samples() - sum(p.size for p in out))
    cap.stop()
    assert min(lags) >= 0
    assert max(lags[600:]) <= 0.1 * SAMPLE_RATE
    assert longest_hush(np.concatenate(out)[SAMPLE_RATE:]) <= 2


def test_stretch_keeps_the_ends_and_the_shape() -> None:
    pcm = np.sin(np.linspace(0, 20, 1000)).astype(np.float32)
    out = stretch(pcm, 6)
    assert out.size == 1006 and out[0] == pcm[0] and out[-1] == pytest.approx(pcm[-1])
    assert np.allclose(out, np.sin(np.linspace(0, 20, 1006)), atol=1e-3)  # the same wave, slower
    assert stretch(pcm, 0) is pcm and stretch(pcm[:1], 2).tolist() == [pcm[0]] * 3
