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
(a block that finds the queue full is dropped and counted, never waited on). Everything else -
downmix, soxr resampling, mixing, levels, silence tracking and device-loss recovery - happens in
``read`` on the one consumer thread (the inference worker).
``start``/``stop`` belong to the controlling thread; ``levels``/``silent_seconds``/``captured_samples``
may be read from any thread.

Backlog accounting: ``captured_samples()`` counts, in 16 kHz samples, the audio the callbacks
delivered (blocks dropped on a full queue included: they come out of ``read`` as a marked stretch,
below), so the audio waiting in the queue is ``captured_samples()`` minus what ``read`` has
returned; the lag meter
(``captionist.pipeline.lag``) uses it to see audio pile up while the consumer is busy.

Backends: a source opens through ``sd.InputStream`` unless its ``Source.backend`` names another
library; ``openers`` maps a backend to a constructor with ``sounddevice.InputStream``'s keywords and
lifecycle (defaults: ``wasapi_loopback.LoopbackInputStream`` for Windows system audio,
``screencapturekit_stream.ScreenCaptureKitInputStream`` for macOS; imported when such a source is
opened), so every source shares the queue, resampler and mixer below.

Device loss: when a stream ends without ``stop`` (PortAudio calls ``finished_callback``) the source
is marked lost, an event says so, and ``read`` tries to reopen it by id then by name every
``reconnect_interval_s``; an event says when it is back.

A stream that stays open but stops sending, as a microphone or monitor does while its sound server
hangs, is said too: after ``STALL_S`` without a block (counted from its first one), and again when
it sends. Its time is not made an outage: whether the audio of the pause is lost depends on the
server (a stopped PulseAudio sends a null sink's missed time afterwards, at once), so the clock
could only be guessed.

Sources that go quiet: WASAPI loopback delivers no audio at all while nothing plays (PortAudio
issue #935), and ScreenCaptureKit's system audio does the same. Counted by samples, a paused video
would then stop the session clock: every later caption would carry a time too early by the pause,
and the last words before it would wait for the next sound. So these backends (``PACED_BY_CLOCK``)
are paced by the clock: once such a source has sent nothing for ``QUIET_AFTER_S``, ``read`` returns
silence for the time since its audio ended (less ``LATENCY_S``, which a late block may still cover),
and goes on doing so while it stays quiet. Microphones and PulseAudio monitors deliver silence
themselves, so a stream of theirs that stops is a fault, not a pause, and is not filled in. A
quiet paced source lags the others by ``LATENCY_S`` on purpose, so the mixer is told that this is
not clock drift (``Mixer.restart_drift_watch``).

Echo: a call on loudspeakers reaches a microphone too. When a microphone (``kind`` "input") is
mixed with system audio, the mixer takes the system audio out of the microphone with an
``echo.EchoCanceller`` (``cancel_echo=False``: not; the level meters need none).

Outages (``poll_outages``), so that no audio goes missing unmarked and the session clock stays the
real one:

* ``OutageKind.NO_SOURCE``: while every source is lost no audio arrives at all. When the last
  source is lost, ``read`` first returns everything captured before (resampler tails included);
  when one comes back (or at ``stop``), the time without any source, measured on the clock from
  the read that saw the loss to the one that reopened a device, is an outage placed after the
  audio ``read`` had returned by then. A source lost while another still delivers is no outage:
  the mixer takes silence for it.
* ``OutageKind.DROPPED``: blocks a full queue turned away (the consumer was stalled, e.g. while a
  model loaded). ``read`` returns silence of their exact length in their place, so the sources
  stay aligned and the clock right, and the outage says which of the returned samples they are
  (to within the resampler's few-ms delay): they are not audio and are not to be transcribed.
"""

from __future__ import annotations

import enum
import math
import os
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

import numpy as np
import soxr

from captionist.audio.bounded_call import CLOSE_WAIT_S, OPEN_WAIT_S, SoundSystemTimeout, bounded_call
from captionist.audio.devices import Source, SourceBackend
from captionist.audio.echo import EchoCanceller, EchoUnavailable
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


PACED_BY_CLOCK = frozenset({SourceBackend.WASAPI_LOOPBACK, SourceBackend.SCREENCAPTUREKIT})
QUIET_AFTER_S = 0.3  # a paced source that sent nothing for this long is quiet (blocks come each 10-20 ms);
# less than the mixer's skew less LATENCY_S, so the mixer never pads a quiet paced source itself
LATENCY_S = 0.1  # of a quiet stretch, the newest part is left to a block that may be on its way
STALL_S = 2.0  # a microphone or monitor that sent nothing for this long has stopped (a hung server)


class OutageKind(enum.Enum):
    NO_SOURCE = "no_source"  # every source was lost: nothing in the returned audio stands for it
    DROPPED = "dropped"  # blocks a full queue turned away: the returned audio holds silence for them


@dataclass(frozen=True)
class Outage:
    """Audio that did not reach the consumer, in 16 kHz samples: after the first ``at`` samples
    that ``Capture.read`` returned, ``samples`` long (for ``DROPPED``, those returned samples)."""

    at: int
    samples: int
    kind: OutageKind = OutageKind.NO_SOURCE


def rms_dbfs(pcm: np.ndarray) -> float:
    if pcm.size == 0:
        return -math.inf
    rms = float(np.sqrt(np.mean(np.square(pcm, dtype=np.float64))))
    return 20.0 * math.log10(rms) if rms > 1e-9 else -math.inf


def _close_quietly(stream: Any) -> None:
    with suppress(Exception):  # a vanished device may fail to close; nothing left to do
        stream.stop()
        stream.close()


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
        # (block, device frames dropped just before it)
        self._queue: queue.Queue[tuple[np.ndarray, int]] = queue.Queue(
            maxsize=max(4, int(queue_seconds * 1000 / block_ms))
        )
        self._stream: Any = None
        self._stopping = False
        self.ended = threading.Event()
        self.overruns = 0
        self.accepted_frames = 0  # device-rate frames the callback put into the queue
        self.dropped_frames = 0  # device-rate frames it had to drop (queue full)
        self._drop_pending = 0  # dropped since the last accepted block (callback thread; then drain)
        self._frames_in = 0  # device-rate frames ``drain`` has taken in, dropped ones included
        self._out_samples = 0  # 16 kHz samples ``drain`` has returned (with a resampler)
        self.channels = max(1, min(2, source.channels))
        self.rate = int(source.samplerate) or SAMPLE_RATE
        self._resampler = self._new_resampler()
        self._flushed = False  # the resampler got its last input; later blocks are dropped
        self.paced = source.backend in PACED_BY_CLOCK
        self.quiet_frames = 0  # device-rate frames of silence ``drain`` put in for a quiet paced source
        self._audio_end: float | None = None  # paced: the clock time its audio so far reaches
        self._last_block_at = 0.0  # paced: when ``drain`` last found a block
        self.stalled = False  # not paced: open, but nothing sent for ``STALL_S`` (``stall_changed``)
        self._sent_frames = 0  # the callback's counts when ``stall_changed`` last looked
        self._sent_at: float | None = None  # when it saw them grow last; None: no block yet

    def _new_resampler(self) -> soxr.ResampleStream | None:
        return (
            None
            if self.rate == SAMPLE_RATE
            else soxr.ResampleStream(self.rate, SAMPLE_RATE, 1, dtype="float32")
        )

    def _callback(self, indata: np.ndarray, frames: int, time_info: Any, status: Any) -> None:
        # Audio thread: copy into the bounded queue and return. Nothing else here.
        try:
            self._queue.put_nowait((indata.copy(), self._drop_pending))
        except queue.Full:
            self.overruns += 1
            self.dropped_frames += frames
            self._drop_pending += frames
        else:
            self._drop_pending = 0
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

            # a hung sound server never answers: give up, and close the stream if it opens later
            self._stream = bounded_call(
                lambda: self._start_stream(opener), OPEN_WAIT_S, on_late=_close_quietly
            )
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

    def _start_stream(self, opener: Any) -> Any:
        stream = opener(
            device=self.source.open_device,
            samplerate=self.rate,
            channels=self.channels,
            dtype="float32",
            blocksize=max(1, self.rate * self._block_ms // 1000),
            callback=self._callback,
            finished_callback=self._finished,
        )
        try:
            stream.start()
        except BaseException:
            _close_quietly(stream)
            raise
        return stream

    def close(self) -> None:
        """Stop and close the device; a sound server that does not answer is left to finish it in
        the background (``bounded_call``), so Stop, Start and hiding the meters never hang."""
        self._stopping = True
        stream, self._stream = self._stream, None
        if stream is not None:
            with suppress(SoundSystemTimeout):
                bounded_call(lambda: _close_quietly(stream), CLOSE_WAIT_S)

    def drain(
        self, final: bool = False, now: float | None = None
    ) -> tuple[np.ndarray, list[tuple[int, int]]]:
        """Queued blocks -> 16 kHz mono float32, and the dropped stretches in it as (offset, length)
        pairs of 16 kHz samples: silence stands in for them (consumer thread). ``final`` (the stream
        is closed: no callback runs) also turns dropped frames no block followed into silence.
        ``now`` (the capture's clock): a paced source's quiet time since its audio ended comes out
        as silence (module docstring)."""
        parts: list[np.ndarray] = []
        drops: list[tuple[int, int]] = []  # (device frame taken in, dropped frames)

        def silence(frames: int) -> None:
            drops.append((self._frames_in, frames))
            parts.append(np.zeros(frames, np.float32))
            self._frames_in += frames

        first_in = self._frames_in
        while True:
            try:
                block, dropped_before = self._queue.get_nowait()
            except queue.Empty:
                break
            if dropped_before:
                silence(dropped_before)
            mono = block.mean(axis=1, dtype=np.float32) if block.ndim == 2 else block.astype(np.float32)
            parts.append(mono.reshape(-1))
            self._frames_in += mono.size
        if final and self._drop_pending:
            silence(self._drop_pending)
            self._drop_pending = 0
        if self.paced and now is not None and not final:
            quiet = self._pace(self._frames_in - first_in, now)
            if quiet:  # the quiet time came before whatever this drain took in
                parts.insert(0, np.zeros(quiet, np.float32))
                drops = [(at + quiet, n) for at, n in drops]
                self._frames_in += quiet
                self.quiet_frames += quiet
        mono = np.concatenate(parts) if parts else np.zeros(0, np.float32)
        if self._resampler is None:
            return mono, [(at - first_in, n) for at, n in drops]
        if self._flushed:  # a callback that raced Stop: the session's audio already ended
            return np.zeros(0, np.float32), []
        if mono.size == 0 and not final:
            return mono, []
        # where the stretches land in the output: the frames before them, at 16 kHz, less what
        # came out before this call (the resampler's delay of a few ms is not counted)
        out_before = self._out_samples
        out = self._resampler.resample_chunk(mono, last=final)
        self._flushed = final
        self._out_samples += out.size
        at16 = [(self._to_16k(at) - out_before, self._to_16k(at + n) - self._to_16k(at)) for at, n in drops]
        return out, [(max(0, min(at, out.size)), n) for at, n in at16]

    def _pace(self, new_frames: int, now: float) -> int:
        """Frames of silence that stand for a paced source's quiet time, to go before the
        ``new_frames`` this drain took in: while it stays quiet, up to ``LATENCY_S`` before now;
        when its audio comes back, up to where that audio began (it ends about now)."""
        if self._audio_end is None:  # the first look: the stream's time starts now
            self._audio_end, self._last_block_at = now, now
        quiet = now - self._last_block_at >= QUIET_AFTER_S  # nothing came for a while before this
        if new_frames:
            self._last_block_at = now
            until = now - new_frames / self.rate
        else:
            until = now - LATENCY_S
        frames = int((until - self._audio_end) * self.rate) if quiet else 0
        frames = max(0, frames)
        self._audio_end += (frames + new_frames) / self.rate
        return frames

    def stall_changed(self, now: float) -> bool:
        """Whether ``stalled`` changed at this look: it is set ``STALL_S`` after the last block
        (counted from the first), and cleared when the callback runs again. The callback's counts
        tell, not the queue: each read drains the queue while it waits, so it is empty here."""
        sent = self.accepted_frames + self.dropped_frames
        if sent != self._sent_frames:
            self._sent_frames, self._sent_at = sent, now
            was, self.stalled = self.stalled, False
            return was
        if not self.stalled and self._sent_at is not None and now - self._sent_at >= STALL_S:
            self.stalled = True
            return True
        return False

    def _to_16k(self, frames: int) -> int:
        return frames * SAMPLE_RATE // self.rate

    def pending(self) -> bool:
        return not self._queue.empty()

    def captured_samples(self) -> int:
        """Frames delivered so far (dropped ones and a quiet source's silence included), in 16 kHz
        samples (any thread)."""
        return (self.accepted_frames + self.dropped_frames + self.quiet_frames) * SAMPLE_RATE // self.rate


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
        cancel_echo: bool = True,
    ) -> None:
        if not sources:
            raise ValueError("Capture needs at least one source")
        self._events: deque[str] = deque(maxlen=100)
        self._sd = sd
        self._resolver = resolver
        self._queue_seconds, self._block_ms = queue_seconds, block_ms
        self._openers = {**DEFAULT_OPENERS, **(openers or {})}
        self._streams = [SourceStream(s, sd, queue_seconds, block_ms, self._openers) for s in sources]
        self._mixer = Mixer([s.id for s in sources], cancellers=self._echo_cancellers(sources, cancel_echo))
        self._levels: dict[str, float] = {s.id: -math.inf for s in sources}
        self._silent_samples: dict[str, int] = {s.id: 0 for s in sources}
        self._lost: dict[str, float] = {}  # source id -> next reconnect time
        self._captured_before: dict[str, int] = {s.id: 0 for s in sources}  # by streams replaced
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

    def _echo_cancellers(self, sources: list[Source], wanted: bool) -> dict[str, EchoCanceller]:
        """One canceller per microphone when system audio is mixed beside it (module docstring)."""
        microphones = [s.id for s in sources if s.kind == "input"]
        if not wanted or not microphones or len(microphones) == len(sources):
            return {}
        try:
            return {sid: EchoCanceller() for sid in microphones}
        except EchoUnavailable as exc:  # the microphones are mixed as they are
            self._events.append(str(exc))
            return {}

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
        """The outages reported since the last call (module docstring), oldest first."""
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
            self._outages.append(Outage(self._returned, samples, OutageKind.NO_SOURCE))

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
            elif sid not in self._lost:
                # an open microphone or monitor that stops sending (its sound server hangs); a
                # paced source's quiet time is silence, not a fault
                if not st.paced and st.stall_changed(now):
                    said = "stopped sending audio; waiting for it to come back" if st.stalled else "is back"
                    self._events.append(f"audio source {st.source.name!r} {said}")
            elif now >= self._lost[sid]:
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
        dropped: list[tuple[int, int]] = []  # (index in the mixed output, length)
        now = self._clock()
        for st in self._streams:
            # a lost stream takes no more callbacks: its resampler's tail is flushed at once
            quiet_before = st.quiet_frames
            pcm, drops = st.drain(final=final or st.source.id in self._lost, now=now)
            if st.quiet_frames != quiet_before:  # a quiet source lags on purpose: not drift
                self._mixer.restart_drift_watch()
            base = self._mixer.next_index(st.source.id)
            dropped.extend((base + at, n) for at, n in drops if n > 0)
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
        while self._mixer.problems:
            self._events.append(self._mixer.problems.pop(0))
        self._returned += out.size
        self._add_dropped(dropped)
        return out if out.size else None

    def _add_dropped(self, stretches: list[tuple[int, int]]) -> None:
        """One ``DROPPED`` outage per stretch of the mixed output where any source was dropped."""
        merged: list[list[int]] = []
        for at, n in sorted(stretches):
            if merged and at <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], at + n)
            else:
                merged.append([at, at + n])
        for start, end in merged:
            self._outages.append(Outage(start, end - start, OutageKind.DROPPED))
