"""The inference worker: a QObject living on a QThread that owns the engine stream.

Usage (the controller does this)::

    control = WorkerControl()
    worker = InferenceWorker(model_provider, capture, control, latency_ms=560, language=None)
    worker.moveToThread(thread); thread.started.connect(worker.run)
    worker.caption.connect(...)       # CaptionUpdate
    control.request_latency(160)      # any thread; applied between feeds
    control.request_language("de")    # models with a language choice; None: the model's default
    control.stop.set()                # after capture.stop(): drain, finish, emit finished

Channels: audio arrives through ``source.read`` (the capture's queue), control through
``WorkerControl`` (an Event and a locked slot), results leave as signals carrying dataclasses from
``captionist.pipeline.events``.

Falling behind (``captionist.pipeline.lag``): the worker publishes its sample counts as a
``Ledger`` (``worker.ledger``, any thread), from which a ``LagMeter`` computes the true lag even
while the worker is blocked in ``feed``. Between feeds a ``LoadGovernor`` decides, from the backlog
(audio waiting to be fed): first the stream moves to a larger latency (cheaper per second of
audio), announced as a notice; the user's latency comes back once it has kept up for a while; only
past ``max_lag_ms`` is the oldest waiting audio dropped so that ``keep_ms`` remains. A drop first
closes the stream segment (so every word of the audio before it comes out before the mark), then
is sent as a ``CaptionUpdate`` whose ``gap`` says which stretch of the session was skipped, a
notice, and counted in ``WorkerStats.dropped_ms``; later token times are shifted by the dropped
amount so they stay on the session clock. Shedding never happens after Stop: everything captured
before Stop is fed and ``finish`` is called, so nothing already spoken is lost.

Outages: a source may also offer ``poll_outages() -> list[Outage]`` (``captionist.audio.capture``),
audio that never reached the worker, placed after the first ``at`` samples the source returned.
When the feeding reaches one, the stream segment is closed and the stretch is sent as a gap:
``NO_SOURCE`` (every device was lost; reason ``SOURCE_LOST``) moves later token times on by its
length; ``DROPPED`` (a full capture queue; reason ``QUEUE_OVERFLOWED``) is silence standing in the
returned audio, which is dropped unfed like a shed (and counted with it). Either way the words
after it keep the real session time. A shed never crosses an outage.

Latency or language change: ``Stream.set_latency`` / ``set_language`` finish the current segment
(committing its text) and continue in a new one; the session text and clock keep going. A value
the model does not offer is reported as an error and the session goes on unchanged.

Ends of utterance: each ``CaptionUpdate`` says where among its tokens the model ended an utterance
(``captionist.pipeline.utterance``), so views start a new line and the transcript a new cue there.

Errors: any exception inside ``run`` becomes an ``error`` signal followed by ``finished``; the
thread always returns normally.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Protocol

import numpy as np
from PySide6.QtCore import QObject, Signal, Slot

from captionist.audio.capture import Outage, OutageKind
from captionist.engine import SAMPLE_RATE, StreamUpdate
from captionist.pipeline.events import AudioGap, CaptionUpdate, GapReason, SessionSummary, WorkerStats
from captionist.pipeline.lag import (
    LagMeter,
    Ledger,
    LoadAction,
    LoadDecision,
    LoadGovernor,
    LoadPolicy,
    ms_of,
    samples_of,
)
from captionist.pipeline.signals import emit
from captionist.pipeline.utterance import utterance_ends

__all__ = ["AudioSource", "InferenceWorker", "LoadPolicy", "WorkerControl"]


class AudioSource(Protocol):
    """``read``/``poll_events`` on the worker thread. A source may also offer
    ``captured_samples() -> int`` (any thread: 16 kHz samples captured so far, queued ones included),
    which makes the lag include what waits in its queue, and ``poll_outages() -> list[Outage]``
    (worker thread: stretches with no audio at all, see the module docstring)."""

    def read(self, timeout: float = 0.0) -> np.ndarray | None: ...

    def poll_events(self) -> list[str]: ...


class WorkerControl:
    """Control channel into the worker: a stop Event and pending latency / language changes."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self._lock = threading.Lock()
        self._changes: dict[str, Any] = {}

    def request_latency(self, latency_ms: int) -> None:
        with self._lock:
            self._changes["latency_ms"] = latency_ms

    def request_language(self, language: str | None) -> None:
        """``None``: the model's default language."""
        with self._lock:
            self._changes["language"] = language

    def take_changes(self) -> dict[str, Any]:
        """The changes asked for since the last call (keys ``latency_ms``, ``language``)."""
        with self._lock:
            changes, self._changes = self._changes, {}
            return changes


class InferenceWorker(QObject):
    caption = Signal(object)  # CaptionUpdate
    stats = Signal(object)  # WorkerStats
    notice = Signal(str)
    error = Signal(str)
    finished = Signal(object)  # SessionSummary

    def __init__(
        self,
        model_provider: Callable[[], Any],
        source: AudioSource,
        control: WorkerControl,
        latency_ms: int,
        policy: LoadPolicy | None = None,
        *,
        language: str | None = None,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        super().__init__()
        self._provider, self._source, self._control = model_provider, source, control
        self._latency_ms, self._language = latency_ms, language
        self._policy = policy or LoadPolicy()
        self._clock = clock
        self._governor = LoadGovernor(self._policy, (), latency_ms)
        self._ledger = Ledger(latency_ms=latency_ms, chosen_latency_ms=latency_ms)
        captured = getattr(source, "captured_samples", None)
        self._meter = LagMeter(self._policy, captured or (lambda: 0), lambda: self._ledger)
        self._gaps: list[AudioGap] = []
        self._backlog: list[np.ndarray] = []
        self._backlog_samples = 0
        self._base_text = ""  # session text committed by earlier stream segments
        self._stream_text_len = 0
        self._outages: deque[Outage] = deque()  # reported, not yet reached by the feeding
        self._outage_samples = 0  # outages reached so far
        self._revision = 0
        self._audio_samples = 0
        self._fed_samples = 0
        self._shed_samples = 0
        self._rtf = 0.0
        self._backend = "?"
        self._last_stats = 0.0

    @property
    def _dropped_ms(self) -> int:
        """Audio skipped unfed so far (shed, or lost to a full capture queue)."""
        return ms_of(self._shed_samples)

    @property
    def _offset_ms(self) -> int:
        """Session time = stream time + this: the audio skipped and the outages reached so far."""
        return ms_of(self._shed_samples + self._outage_samples)

    @property
    def ledger(self) -> Ledger:
        """The worker's sample counts (any thread): one immutable value, replaced after each step."""
        return self._ledger

    def _publish(self, decoded: int | None = None, gap_end: int | None = None) -> None:
        led = self._ledger
        self._ledger = Ledger(
            received=self._audio_samples,
            fed=self._fed_samples,
            decoded=led.decoded if decoded is None else decoded,
            shed=self._shed_samples,
            last_gap_end=led.last_gap_end if gap_end is None else gap_end,
            latency_ms=self._latency_ms,
            chosen_latency_ms=self._governor.chosen_ms,
        )

    @Slot()
    def run(self) -> None:
        error: str | None = None
        try:
            self._run()
        except Exception as exc:  # loop boundary: report, never die silently
            error = str(exc) or type(exc).__name__
            emit(self.error, error)
        self._emit_stats()
        emit(
            self.finished,
            SessionSummary(
                text=self._base_text,
                audio_ms=ms_of(self._audio_samples),
                dropped_ms=self._dropped_ms,
                error=error,
                gaps=tuple(self._gaps),
            ),
        )

    def _run(self) -> None:
        model = self._provider()
        info = getattr(model, "info", {}) or {}
        self._backend = str(info.get("backend", "?"))
        latencies = info.get("latencies_ms") or getattr(model, "latencies_ms", ()) or ()
        self._governor = LoadGovernor(self._policy, [int(x) for x in latencies], self._latency_ms)
        stream = model.stream(self._latency_ms, self._language)
        max_feed = samples_of(self._policy.max_feed_ms)
        while True:
            stopping = self._control.stop.is_set()
            ready = self._backlog and self._feed_limit(max_feed) > 0  # else: waiting for audio
            chunk = self._source.read(0.0 if ready or stopping else 0.05)
            if chunk is not None and chunk.size:
                self._backlog.append(chunk)
                self._backlog_samples += chunk.size
                self._audio_samples += chunk.size
                self._publish()
            for message in self._source.poll_events():
                emit(self.notice, message)
            poll_outages = getattr(self._source, "poll_outages", None)
            if poll_outages is not None:
                self._outages.extend(poll_outages())
            self._reach_outages(stream, flush=stopping and chunk is None)
            if stopping and chunk is None and not self._backlog:
                break
            self._apply(stream, self._control.take_changes())
            if not stopping:
                self._govern(stream)
            self._reach_outages(stream)
            limit = self._feed_limit(max_feed)
            if self._backlog and limit > 0:
                pcm = self._take(limit)
                self._fed_samples += pcm.size
                self._publish()
                t0 = self._clock()
                update = stream.feed(pcm)
                spent = self._clock() - t0
                self._rtf = 0.7 * self._rtf + 0.3 * (spent / (pcm.size / SAMPLE_RATE))
                self._handle(update, final=False)
            if self._clock() - self._last_stats >= self._policy.stats_interval_s:
                self._emit_stats()
        self._handle(stream.finish(), final=True)

    def _apply(self, stream: Any, changes: dict[str, Any]) -> None:
        """Switch latency and/or language between feeds (each switch closes a stream segment)."""
        latency = changes.get("latency_ms")
        if latency is not None and latency == self._latency_ms:
            self._governor.choose(latency)  # e.g. the latency the policy had raised to
            self._publish()
        elif latency is not None:
            try:
                update = stream.set_latency(latency)
            except ValueError as exc:
                emit(self.error, str(exc))
            else:
                self._latency_ms = latency
                self._governor.choose(latency)
                self._handle(update, final=False)
                emit(self.notice, f"latency set to {latency} ms")
        if "language" in changes and changes["language"] != self._language:
            language = changes["language"]
            try:
                update = stream.set_language(language)
            except ValueError as exc:
                emit(self.error, str(exc))
            else:
                self._language = language
                self._handle(update, final=False)
                emit(self.notice, f"language set to {language or 'the model default'}")

    def _next_sample(self) -> int:
        """Where the oldest waiting sample sits among the samples the source returned."""
        return self._audio_samples - self._backlog_samples

    def _feed_limit(self, max_feed: int) -> int:
        """``max_feed``, or less so that a feed ends where the next outage begins (0: wait for the
        rest of a dropped stretch to arrive)."""
        if not self._outages:
            return max_feed
        return max(0, min(max_feed, self._outages[0].at - self._next_sample()))

    def _reach_outages(self, stream: Any, flush: bool = False) -> None:
        """Mark every outage the feeding has reached: close the segment, send the gap, move the
        clock. A dropped stretch waits until all of it is in the backlog (``flush``: the source has
        nothing more, take what is there)."""
        while self._outages and self._outages[0].at <= self._next_sample():
            outage = self._outages[0]
            dropped = outage.kind is OutageKind.DROPPED
            if dropped and outage.at + outage.samples > self._audio_samples and not flush:
                return
            self._outages.popleft()
            self._handle(stream.set_latency(self._latency_ms), final=False)
            start = self._next_sample() + self._outage_samples  # on the session clock
            if dropped:
                n = min(outage.samples, self._backlog_samples)
                self._skip(n)
                self._publish(decoded=self._fed_samples)
                emit(self.notice, f"{n / SAMPLE_RATE:.1f} s of audio were lost: the audio queue overflowed")
                self._send_gap(AudioGap(ms_of(start), ms_of(start + n), GapReason.QUEUE_OVERFLOWED))
            else:
                self._outage_samples += outage.samples
                gap = AudioGap(ms_of(start), ms_of(start + outage.samples), GapReason.SOURCE_LOST)
                self._send_gap(gap)

    def _skip(self, n: int) -> None:
        """Drop the ``n`` oldest waiting samples unfed; they count as skipped audio."""
        if n > 0:
            self._take(n)
            self._shed_samples += n

    def _send_gap(self, gap: AudioGap) -> None:
        """Record a stretch of the session that was not transcribed and show it as a line of its own."""
        self._gaps.append(gap)
        emit(
            self.caption,
            CaptionUpdate(revision=self._revision, text=self._base_text, new_text="", new_tokens=[], gap=gap),
        )

    def _take(self, max_samples: int) -> np.ndarray:
        pcm = np.concatenate(self._backlog)
        head, rest = pcm[:max_samples], pcm[max_samples:]
        self._backlog = [rest] if rest.size else []
        self._backlog_samples = rest.size
        return head

    def _govern(self, stream: Any) -> None:
        """Apply the load policy's decision for the current backlog (between feeds, not after Stop)."""
        decision = self._governor.decide(self._backlog_samples, self._audio_samples)
        if decision.action == LoadAction.SHED:
            self._shed(stream, decision.shed_samples)
        elif decision.action != LoadAction.NONE:
            self._switch_latency(stream, decision)

    def _switch_latency(self, stream: Any, decision: LoadDecision) -> None:
        latency = decision.latency_ms
        assert latency is not None
        try:
            update = stream.set_latency(latency)
        except ValueError as exc:  # a choice the model listed but refused: keep going as we are
            emit(self.error, str(exc))
            return
        self._latency_ms = latency
        self._governor.applied(decision, self._audio_samples)
        self._handle(update, final=False)
        if decision.action == LoadAction.RAISE_LATENCY:
            emit(self.notice, f"transcription is falling behind: latency raised to {latency} ms to keep up")
        else:
            emit(self.notice, f"transcription keeps up again: latency back to {latency} ms")

    def _shed(self, stream: Any, n: int) -> None:
        """Drop the oldest ``n`` waiting samples and report them as a gap in the session."""
        clamped = bool(self._outages) and self._outages[0].at - self._next_sample() < n
        if clamped:  # never across an outage: shed up to it, mark it, then decide again
            n = self._outages[0].at - self._next_sample()
            if n <= 0:
                return
        # Close the segment first: the words of the audio already fed come out before the mark,
        # and the model does not see the two sides of the gap as one stretch of speech.
        self._handle(stream.set_latency(self._latency_ms), final=False)
        first = self._next_sample()  # among the samples the source returned
        start = first + self._outage_samples  # on the session clock
        self._skip(n)
        self._publish(decoded=self._fed_samples, gap_end=first + n)
        emit(self.notice, f"transcription fell behind: skipped {n / SAMPLE_RATE:.1f} s of audio")
        self._send_gap(AudioGap(ms_of(start), ms_of(start + n), GapReason.FELL_BEHIND))
        if clamped:
            self._reach_outages(stream)
            self._govern(stream)

    def _handle(self, update: StreamUpdate, final: bool) -> None:
        self._publish(decoded=self._fed_samples - samples_of(update.lag_ms))
        new_text = update.text[self._stream_text_len :]
        self._stream_text_len = len(update.text)
        if new_text:
            self._base_text += new_text
            self._revision += 1
        if new_text or final or update.events:
            tokens = [replace(t, time_ms=t.time_ms + self._offset_ms) for t in update.new_tokens]
            emit(
                self.caption,
                CaptionUpdate(
                    revision=self._revision,
                    text=self._base_text,
                    new_text=new_text,
                    new_tokens=tokens,
                    events=list(update.events),
                    final=final,
                    utterance_ends=utterance_ends(update),
                ),
            )

    def _emit_stats(self) -> None:
        self._last_stats = self._clock()
        lag = self._meter.read()
        emit(
            self.stats,
            WorkerStats(
                backend=self._backend,
                rtf=round(self._rtf, 3),
                lag_ms=lag.lag_ms,
                dropped_ms=self._dropped_ms,
                audio_ms=ms_of(self._audio_samples),
                latency_ms=self._latency_ms,
                language=self._language,
                lag_state=lag.state,
                backlog_ms=lag.backlog_ms,
                shed_in_s=lag.shed_in_s,
                chosen_latency_ms=lag.chosen_latency_ms,
            ),
        )
