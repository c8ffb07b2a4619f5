"""Capture audio from one or more sources as 16 kHz mono float32.

Usage::

    cap = Capture([source], sd=sounddevice)   # sources from captionist.audio.devices
    cap = Capture([mic, speakers], sd=sounddevice, openers={SourceBackend.WASAPI_LOOPBACK: opener})
    cap.start()                                 # opens every device at its native rate
    pcm = cap.read(timeout=0.1)                 # consumer thread: 16 kHz mono, or None
    cap.levels()                                # {source id: dBFS}, any thread
    cap.stop()                                  # closes devices; queued audio stays readable
    while (pcm := cap.read(0)) is not None: ... # drain what was already captured

Threads: the PortAudio callback only copies the block into a bounded queue and counts its frames
(overruns are counted, never waited on). Everything else - downmix, soxr resampling, mixing,
levels, silence tracking and device-loss recovery - happens in ``read`` on the one consumer thread
(the inference worker).
``start``/``stop`` belong to the controlling thread; ``levels``/``silent_seconds``/``captured_samples``
may be read from any thread.

Backlog accounting: ``captured_samples()`` counts, in 16 kHz samples, the audio the callbacks
accepted into the queue (blocks lost to an overrun are not counted), so the audio waiting in the
queue is ``captured_samples()`` minus what ``read`` has returned; the lag meter
(``captionist.pipeline.lag``) uses it to see audio pile up while the consumer is busy.

Backends: a source opens through ``sd.InputStream`` unless its ``Source.backend`` names another
library; ``openers`` maps a backend to a constructor with ``sounddevice.InputStream``'s keywords and
lifecycle (defaults: ``wasapi_loopback.LoopbackInputStream`` for Windows system audio,
``screencapturekit_stream.ScreenCaptureKitInputStream`` for macOS; imported when such a source is
opened), so every source shares the queue, resampler and mixer below.

Device loss: when a stream ends without ``stop`` (PortAudio calls ``finished_callback``) the source
is marked lost, an event says so, and ``read`` tries to reopen it by id then by name every
``reconnect_interval_s``; an event says when it is back.

Outages: while every source is lost no audio arrives at all, so the audio after the recovery would
sit right after the audio before the loss and the session clock would fall behind the real one.
When the last source is lost, ``read`` first returns everything captured before (resampler tails
included); when one comes back (or at ``stop``), the time without any source, measured on the
clock from the read that saw the loss to the one that reopened a device, is reported by
``poll_outages`` as an ``Outage`` placed after the audio ``read`` had returned by then. A source
lost while another still delivers is no outage: the mixer takes silence for it.
"""

from __future__ import annotations

import math
import os
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import soxr

from captionist.audio.devices import Source, SourceBackend
from captionist.audio.mixer import Mixer

SAMPLE_RATE = 16000
SILENCE_DBFS = -55.0
Resolver = Callable[[Source], "Source | None"]
StreamOpener = Callable[..., Any]  # sounddevice.InputStream's keywords -> a started-later stream


def _open_wasapi_loopback(**kwargs: Any) -> Any:
    from captionist.audio.wasapi_loopback import LoopbackInputStream

    return LoopbackInputStream(**kwargs)


def _open_screencapturekit(**kwargs: Any) -> Any:
    from captionist.audio.screencapturekit_stream import ScreenCaptureKitInputStream

    return ScreenCaptureKitInputStream(**kwargs)


DEFAULT_OPENERS: Mapping[SourceBackend, StreamOpener] = {
    SourceBackend.WASAPI_LOOPBACK: _open_wasapi_loopback,
    SourceBackend.SCREENCAPTUREKIT: _open_screencapturekit,
}


class CaptureError(RuntimeError):
    """A device could not be opened; the message names it and says why."""


@dataclass(frozen=True)
class Outage:
    """A stretch with no audio source at all, in 16 kHz samples: it began after the first ``at``
    samples that ``Capture.read`` returned and lasted ``samples``."""

    at: int
    samples: int


def rms_dbfs(pcm: np.ndarray) -> float:
    if pcm.size == 0:
        return -math.inf
    rms = float(np.sqrt(np.mean(np.square(pcm, dtype=np.float64))))
    return 20.0 * math.log10(rms) if rms > 1e-9 else -math.inf


class SourceStream:
    """One open device: its callback, its bounded block queue and its resampler."""

    def __init__(
        self,
        source: Source,
        sd: Any,
        queue_seconds: float,
        block_ms: int,
        openers: Mapping[SourceBackend, StreamOpener] = DEFAULT_OPENERS,
    ) -> None:
        self.source = source
        self._sd = sd
        self._openers = openers
        self._block_ms = block_ms
        self._queue: queue.Queue[np.ndarray] = queue.Queue(
            maxsize=max(4, int(queue_seconds * 1000 / block_ms))
        )
        self._stream: Any = None
        self._stopping = False
        self.ended = threading.Event()
        self.overruns = 0
        self.accepted_frames = 0  # device-rate frames the callback put into the queue
        self.channels = max(1, min(2, source.channels))
        self.rate = int(source.samplerate) or SAMPLE_RATE
        self._resampler = self._new_resampler()
        self._flushed = False  # the resampler got its last input; later blocks are dropped

    def _new_resampler(self) -> soxr.ResampleStream | None:
        return (
            None
            if self.rate == SAMPLE_RATE
            else soxr.ResampleStream(self.rate, SAMPLE_RATE, 1, dtype="float32")
        )

    def _callback(self, indata: np.ndarray, frames: int, time_info: Any, status: Any) -> None:
        # Audio thread: copy into the bounded queue and return. Nothing else here.
        try:
            self._queue.put_nowait(indata.copy())
        except queue.Full:
            self.overruns += 1
        else:
            self.accepted_frames += frames

    def _finished(self) -> None:
        if not self._stopping:
            self.ended.set()

    def open(self) -> None:
        saved = {k: os.environ.get(k) for k in self.source.env}
        os.environ.update(self.source.env)
        try:
            if self.source.backend is SourceBackend.PORTAUDIO:
                opener = self._sd.InputStream
            elif self.source.backend in self._openers:
                opener = self._openers[self.source.backend]
            else:
                raise RuntimeError(f"no stream opener for {self.source.backend.value}")
            self._stream = opener(
                device=self.source.open_device,
                samplerate=self.rate,
                channels=self.channels,
                dtype="float32",
                blocksize=max(1, self.rate * self._block_ms // 1000),
                callback=self._callback,
                finished_callback=self._finished,
            )
            self._stream.start()
        except Exception as exc:  # PortAudioError and friends: report, keep the app alive
            self._stream = None
            raise CaptureError(f"cannot open {self.source.name!r}: {exc}") from exc
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        self.ended.clear()

    def close(self) -> None:
        self._stopping = True
        stream, self._stream = self._stream, None
        if stream is not None:
            try:
                stream.stop()
                stream.close()
            except Exception:  # a vanished device may fail to close; nothing left to do
                pass

    def drain(self, final: bool = False) -> np.ndarray:
        """Queued blocks -> 16 kHz mono float32 (consumer thread)."""
        blocks = []
        while True:
            try:
                blocks.append(self._queue.get_nowait())
            except queue.Empty:
                break
        pcm = np.concatenate(blocks) if blocks else np.zeros((0, self.channels), np.float32)
        mono = pcm.mean(axis=1, dtype=np.float32) if pcm.ndim == 2 else pcm.astype(np.float32)
        if self._resampler is None:
            return mono
        if self._flushed:  # a callback that raced Stop: the session's audio already ended
            return np.zeros(0, np.float32)
        if mono.size == 0 and not final:
            return mono
        self._flushed = final
        return self._resampler.resample_chunk(mono, last=final)

    def pending(self) -> bool:
        return not self._queue.empty()

    def captured_samples(self) -> int:
        """Frames accepted so far, in 16 kHz samples (any thread)."""
        return self.accepted_frames * SAMPLE_RATE // self.rate


class Capture:
    def __init__(
        self,
        sources: list[Source],
        sd: Any,
        *,
        resolver: Resolver | None = None,
        queue_seconds: float = 30.0,
        block_ms: int = 20,
        reconnect_interval_s: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        openers: Mapping[SourceBackend, StreamOpener] | None = None,
    ) -> None:
        if not sources:
            raise ValueError("Capture needs at least one source")
        self._sd = sd
        self._resolver = resolver
        self._queue_seconds, self._block_ms = queue_seconds, block_ms
        self._openers = {**DEFAULT_OPENERS, **(openers or {})}
        self._streams = [SourceStream(s, sd, queue_seconds, block_ms, self._openers) for s in sources]
        self._mixer = Mixer([s.id for s in sources])
        self._levels: dict[str, float] = {s.id: -math.inf for s in sources}
        self._silent_samples: dict[str, int] = {s.id: 0 for s in sources}
        self._lost: dict[str, float] = {}  # source id -> next reconnect time
        self._captured_before: dict[str, int] = {s.id: 0 for s in sources}  # by streams replaced
        self._events: deque[str] = deque(maxlen=100)
        self._reconnect_s, self._clock = reconnect_interval_s, clock
        self._running = False
        self._flushed = False
        self._captured_final: int | None = None  # the count at the final flush
        self._idle = threading.Event()
        self._returned = 0  # samples ``read`` has returned
        self._all_lost_since: float | None = None  # clock time the last live source was lost
        self._outages: deque[Outage] = deque(maxlen=1000)

    @property
    def sources(self) -> list[Source]:
        return [s.source for s in self._streams]

    def start(self) -> None:
        """Open every device; on failure close what was opened and raise ``CaptureError``."""
        opened: list[SourceStream] = []
        try:
            for st in self._streams:
                st.open()
                opened.append(st)
        except CaptureError:
            for st in opened:
                st.close()
            raise
        self._running = True

    def stop(self) -> None:
        """Close the devices. Audio already queued is still returned by ``read``.

        The devices close before ``running`` turns false, so the final flush in ``read`` comes after
        the last callback.
        """
        for st in self._streams:
            st.close()
        self._end_outage()
        self._running = False

    @property
    def running(self) -> bool:
        return self._running

    def levels(self) -> dict[str, float]:
        return dict(self._levels)

    def silent_seconds(self, source_id: str) -> float:
        return self._silent_samples.get(source_id, 0) / SAMPLE_RATE

    def overruns(self) -> int:
        return sum(st.overruns for st in self._streams)

    def captured_samples(self) -> int:
        """16 kHz samples captured so far, queued ones included (any thread): the longest source,
        since the mixer's output follows it. Counts survive a device reconnect; a block that races
        Stop after the final flush is dropped, so it is not counted either."""
        if self._captured_final is not None:
            return self._captured_final
        streams = list(self._streams)
        return max(self._captured_before[st.source.id] + st.captured_samples() for st in streams)

    def poll_events(self) -> list[str]:
        """Messages about lost / recovered devices since the last call."""
        out = []
        while self._events:
            out.append(self._events.popleft())
        return out

    def poll_outages(self) -> list[Outage]:
        """The outages (every source lost) that ended since the last call, oldest first."""
        out = []
        while self._outages:
            out.append(self._outages.popleft())
        return out

    def _end_outage(self) -> None:
        if self._all_lost_since is None:
            return
        seconds = max(0.0, self._clock() - self._all_lost_since)
        self._all_lost_since = None
        samples = round(seconds * SAMPLE_RATE)
        if samples:
            self._outages.append(Outage(self._returned, samples))

    def _check_devices(self) -> None:
        now = self._clock()
        for i, st in enumerate(self._streams):
            sid = st.source.id
            if st.ended.is_set() and sid not in self._lost:
                st.close()
                self._lost[sid] = now + self._reconnect_s
                self._events.append(
                    f"audio source {st.source.name!r} disappeared; waiting for it to come back"
                )
                if len(self._lost) == len(self._streams):
                    self._all_lost_since = now
            elif sid in self._lost and now >= self._lost[sid]:
                self._lost[sid] = now + self._reconnect_s
                found = self._resolver(st.source) if self._resolver else st.source
                if found is None:
                    continue
                fresh = SourceStream(found, self._sd, self._queue_seconds, self._block_ms, self._openers)
                try:
                    fresh.open()
                except CaptureError:
                    continue
                fresh.source = st.source  # keep the id the mixer knows
                self._streams[i] = fresh
                self._captured_before[sid] += st.captured_samples()  # the lost stream takes no more
                del self._lost[sid]
                self._end_outage()
                self._events.append(f"audio source {st.source.name!r} is back")

    def read(self, timeout: float = 0.0) -> np.ndarray | None:
        """Return newly captured 16 kHz mono audio, or None if nothing came within ``timeout``.

        After ``stop`` this returns what was queued, then the resampler tails, then None for good.
        """
        if self._running:
            self._check_devices()
        deadline = time.monotonic() + timeout
        while self._running and not any(st.pending() for st in self._streams):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            self._idle.wait(min(0.01, left))  # short poll; the audio callback never signals
        final = not self._running and not self._flushed
        if final:
            self._flushed = True
            self._captured_final = self.captured_samples()
        for st in self._streams:
            # a lost stream takes no more callbacks: its resampler's tail is flushed at once
            pcm = st.drain(final=final or st.source.id in self._lost)
            if pcm.size:
                sid = st.source.id
                self._levels[sid] = rms_dbfs(pcm)
                self._silent_samples[sid] = (
                    self._silent_samples[sid] + pcm.size if self._levels[sid] < SILENCE_DBFS else 0
                )
            self._mixer.push(st.source.id, pcm)
        # with every source lost, all that was captured before the loss comes out now, so an outage
        # that follows sits after it
        all_lost = self._all_lost_since is not None
        out = self._mixer.pull(final=final or not self._running or all_lost)
        self._returned += out.size
        return out if out.size else None
