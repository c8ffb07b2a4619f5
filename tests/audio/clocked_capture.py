"""A fake device played in real time on a fake clock, read as the worker reads it (the capture tests
of paced and stalled sources)."""

from __future__ import annotations

import numpy as np

from captionist.audio.capture import Capture
from captionist.audio.devices import Source, SourceBackend
from tests.fakes.fake_sounddevice import FakeSoundDevice

RATE = 48000
BLOCK_S = 0.02  # as the devices deliver: a block every 10-20 ms
TONE = 0.25


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def capture(fake_sd: FakeSoundDevice, backend: SourceBackend, clock: Clock) -> Capture:
    fake_sd.add_device("Speakers", rate=RATE, channels=2)
    source = Source(
        id="out", name="Speakers", kind="loopback", hostapi="x", channels=2, samplerate=RATE,
        open_device=0, backend=backend,
    )  # fmt: skip
    opener = fake_sd.InputStream  # the fake device stands in for the system-audio library
    return Capture([source], sd=fake_sd, clock=clock, openers={backend: opener})


class Run:
    """Plays the fake device in real time on the fake clock and reads as the worker does."""

    def __init__(self, cap: Capture, clock: Clock, fake_sd: FakeSoundDevice) -> None:
        self.cap, self.clock, self.fake_sd = cap, clock, fake_sd
        self.out: list[np.ndarray] = []

    def read(self) -> None:
        while (pcm := self.cap.read(0)) is not None:
            self.out.append(pcm)

    def play(self, seconds: float, level: float = TONE) -> None:
        frames = round(BLOCK_S * RATE)
        for _ in range(round(seconds / BLOCK_S)):
            self.clock.t += BLOCK_S
            self.fake_sd.streams[-1].push(np.full((frames, 2), level, np.float32))
            self.read()

    def nothing(self, seconds: float) -> None:
        for _ in range(round(seconds / 0.1)):  # the worker keeps reading: every 0.1 s here
            self.clock.t += 0.1
            self.read()

    def audio(self) -> np.ndarray:
        return np.concatenate(self.out)


def loud_runs(pcm: np.ndarray) -> list[tuple[float, float]]:
    """(start s, end s) of each stretch of the tone, at 16 kHz."""
    loud = np.abs(pcm) > TONE / 2
    edges = np.flatnonzero(np.diff(np.concatenate([[0], loud.astype(np.int8), [0]])))
    return [(a / 16000, b / 16000) for a, b in zip(edges[::2], edges[1::2], strict=True)]


def started(fake_sd: FakeSoundDevice, backend: SourceBackend) -> Run:
    """A started capture of one fake source of ``backend`` on a fake clock (``run.cap``, ``run.clock``)."""
    clock = Clock()
    cap = capture(fake_sd, backend, clock)
    cap.start()
    return Run(cap, clock, fake_sd)
