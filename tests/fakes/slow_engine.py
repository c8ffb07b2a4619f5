"""An engine made artificially slow on a simulated clock, and a capture that fills in real time on
that clock: load-policy runs that are exact and instant, with no sleeping and no wall-clock figures.

    clock = SimClock()
    model = SlowModel(FakeModel(), clock, per_second_s=0.55, per_chunk_s=0.15)
    source = RealTimeSource(pcm, clock, control)        # audio "arrives" as clock.now advances
    worker = InferenceWorker(lambda: model, source, control, 240, policy, clock=clock)
    worker.run()                                         # on this thread; signals are direct

Cost model of ``feed`` (the clock advances by it, as a sleep in proportion to the audio would):
``seconds * (per_second_s + per_chunk_s * 1000 / latency_ms)``: a fixed cost per latency-sized
chunk on top of a cost per second, as in the FastConformer engine, where small chunks are dear
(bench/README.md: per-graph fixed cost at small chunks). So RTF(latency) falls as latency grows.
A segment end (``set_latency``, ``finish``) costs one chunk.

``BlockingModel`` holds every ``feed`` until the test releases it, to observe the lag while the
worker is blocked inside the engine.
"""

from __future__ import annotations

import threading

import numpy as np

from captionist.engine import SAMPLE_RATE, StreamUpdate
from captionist.pipeline.worker import WorkerControl
from tests.fakes.fake_engine import FakeModel, FakeStream


class SimClock:
    """Seconds since the session started; only ``advance`` moves it."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class RealTimeSource:
    """A capture whose device delivers ``block_ms`` blocks of ``pcm`` in real time on ``clock``.

    ``read`` returns what arrived since the last read; with nothing new it waits (advances the clock)
    until the next block. When all of ``pcm`` was read it sets ``control.stop`` (Stop at the end).
    """

    def __init__(self, pcm: np.ndarray, clock: SimClock, control: WorkerControl, block_ms: int = 80) -> None:
        self.pcm, self.clock, self.control = pcm, clock, control
        self.block = SAMPLE_RATE * block_ms // 1000
        self.given = 0

    def captured_samples(self) -> int:
        arrived = int(self.clock.now * SAMPLE_RATE + 1e-6) // self.block * self.block
        return min(self.pcm.size, arrived)

    def read(self, timeout: float = 0.0) -> np.ndarray | None:
        if self.given >= self.pcm.size:
            self.control.stop.set()
            return None
        if self.captured_samples() <= self.given and timeout > 0:
            self.clock.now = (self.given + self.block) / SAMPLE_RATE
        n = self.captured_samples()
        if n <= self.given:
            return None
        chunk, self.given = self.pcm[self.given : n], n
        return chunk

    def poll_events(self) -> list[str]:
        return []


class SlowStream:
    """A ``FakeStream`` whose calls advance the simulated clock by the cost model."""

    def __init__(self, model: SlowModel, inner: FakeStream) -> None:
        self._model, self._inner = model, inner

    @property
    def latency_ms(self) -> int:
        return self._inner.latency_ms

    def feed(self, pcm: np.ndarray) -> StreamUpdate:
        self._model.spend(pcm.size / SAMPLE_RATE, self._inner.latency_ms)
        return self._inner.feed(pcm)

    def _segment_cost(self) -> None:
        latency = self._inner.latency_ms
        self._model.spend(latency / 1000, latency, per_second=False)

    def set_latency(self, latency_ms: int) -> StreamUpdate:
        self._segment_cost()
        return self._inner.set_latency(latency_ms)

    def set_language(self, language: str | None) -> StreamUpdate:
        self._segment_cost()
        return self._inner.set_language(language)

    def finish(self) -> StreamUpdate:
        self._segment_cost()
        return self._inner.finish()


class SlowModel:
    """Wraps a ``FakeModel``: same info and tokens, streams whose calls cost simulated time."""

    def __init__(self, inner: FakeModel, clock: SimClock, *, per_second_s: float, per_chunk_s: float) -> None:
        self.inner, self.clock = inner, clock
        self.per_second_s, self.per_chunk_s = per_second_s, per_chunk_s
        self.info = inner.info
        self.latencies_ms = inner.latencies_ms
        self.busy_s = 0.0

    def rtf(self, latency_ms: int) -> float:
        """Compute seconds per second of audio at ``latency_ms`` (above 1: cannot keep up)."""
        return self.per_second_s + self.per_chunk_s * 1000 / latency_ms

    def spend(self, seconds: float, latency_ms: int, per_second: bool = True) -> None:
        cost = seconds * self.rtf(latency_ms) if per_second else self.per_chunk_s
        self.busy_s += cost
        self.clock.advance(cost)

    def stream(self, latency_ms: int | None = None, language: str | None = None) -> SlowStream:
        return SlowStream(self, self.inner.stream(latency_ms, language))


class BlockingModel(FakeModel):
    """A ``FakeModel`` whose every ``feed`` waits until ``release`` (``entered`` is set inside it)."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.entered = threading.Event()
        self._go = threading.Event()

    def release(self) -> None:
        self._go.set()

    def stream(self, latency_ms: int | None = None, language: str | None = None, **kw: object) -> FakeStream:
        stream = super().stream(latency_ms, language)
        plain_feed = stream.feed

        def feed(pcm: np.ndarray) -> StreamUpdate:
            self.entered.set()
            self._go.wait(30)
            return plain_feed(pcm)

        stream.feed = feed  # type: ignore[method-assign]
        return stream
