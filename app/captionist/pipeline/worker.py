"""The inference worker: a QObject living on a QThread that owns the engine stream.

Usage (the controller does this)::

    control = WorkerControl()
    worker = InferenceWorker(model_provider, capture, control, delay_ms=480)
    worker.moveToThread(thread); thread.started.connect(worker.run)
    worker.caption.connect(...)       # CaptionUpdate
    control.request_delay(960)        # any thread; applied between feeds
    control.stop.set()                # after capture.stop(): drain, finish, emit finished

Channels: audio arrives through ``source.read`` (the capture's queue), control through
``WorkerControl`` (an Event and a locked slot), results leave as signals carrying dataclasses from
``captionist.pipeline.events``.

Load-shedding policy (``LoadPolicy``): while running, if more than ``max_lag_ms`` of audio waits
to be fed, the oldest waiting audio is dropped so that ``keep_ms`` remains; the drop is reported
as a notice and counted in ``WorkerStats.dropped_ms``, and later token times are shifted by the
dropped amount so they stay on the session clock. Shedding never happens after Stop: everything
captured before Stop is fed and ``finish`` is called, so nothing already spoken is lost.

Delay change: the current stream is finished (committing its text) and ``reset`` to the new delay;
the session text keeps growing from where it was.

Errors: any exception inside ``run`` becomes an ``error`` signal followed by ``finished``; the
thread always returns normally.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Protocol

import numpy as np
from PySide6.QtCore import QObject, Signal, Slot

from captionist.engine import SAMPLE_RATE, StreamUpdate
from captionist.pipeline.events import CaptionUpdate, SessionSummary, WorkerStats
from captionist.pipeline.signals import emit


class AudioSource(Protocol):
    def read(self, timeout: float = 0.0) -> np.ndarray | None: ...

    def poll_events(self) -> list[str]: ...


@dataclass(frozen=True)
class LoadPolicy:
    max_lag_ms: int = 4000
    keep_ms: int = 1000
    max_feed_ms: int = 960
    stats_interval_s: float = 0.25


class WorkerControl:
    """Control channel into the worker: a stop Event and a pending delay change."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self._lock = threading.Lock()
        self._delay: int | None = None

    def request_delay(self, delay_ms: int) -> None:
        with self._lock:
            self._delay = delay_ms

    def take_delay(self) -> int | None:
        with self._lock:
            value, self._delay = self._delay, None
            return value


def _ms(samples: int) -> int:
    return samples * 1000 // SAMPLE_RATE


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
        delay_ms: int,
        policy: LoadPolicy | None = None,
    ) -> None:
        super().__init__()
        self._provider, self._source, self._control = model_provider, source, control
        self._delay_ms = delay_ms
        self._policy = policy or LoadPolicy()
        self._backlog: list[np.ndarray] = []
        self._backlog_samples = 0
        self._base_text = ""  # session text committed by earlier stream segments
        self._stream_text_len = 0
        self._offset_ms = 0  # session time of the current segment's t=0 (plus shed audio)
        self._revision = 0
        self._audio_samples = 0
        self._dropped_ms = 0
        self._engine_lag_ms = 0
        self._rtf = 0.0
        self._backend = "?"
        self._last_stats = 0.0

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
                audio_ms=_ms(self._audio_samples),
                dropped_ms=self._dropped_ms,
                error=error,
            ),
        )

    def _run(self) -> None:
        model = self._provider()
        self._backend = str(getattr(model, "info", {}).get("backend", "?"))
        stream = model.stream(self._delay_ms)
        max_feed = self._policy.max_feed_ms * SAMPLE_RATE // 1000
        while True:
            stopping = self._control.stop.is_set()
            chunk = self._source.read(0.0 if self._backlog or stopping else 0.05)
            if chunk is not None and chunk.size:
                self._backlog.append(chunk)
                self._backlog_samples += chunk.size
                self._audio_samples += chunk.size
            for message in self._source.poll_events():
                emit(self.notice, message)
            if stopping and chunk is None and not self._backlog:
                break
            if not stopping:
                self._shed()
            new_delay = self._control.take_delay()
            if new_delay is not None and new_delay != self._delay_ms:
                self._handle(stream.finish(), final=False)
                self._next_segment()
                stream.reset(new_delay)
                self._delay_ms = new_delay
                emit(self.notice, f"delay set to {new_delay} ms")
            if self._backlog:
                pcm = self._take(max_feed)
                t0 = time.perf_counter()
                update = stream.feed(pcm)
                spent = time.perf_counter() - t0
                self._rtf = 0.7 * self._rtf + 0.3 * (spent / (pcm.size / SAMPLE_RATE))
                self._handle(update, final=False)
            if time.perf_counter() - self._last_stats >= self._policy.stats_interval_s:
                self._emit_stats()
        self._handle(stream.finish(), final=True)

    def _take(self, max_samples: int) -> np.ndarray:
        pcm = np.concatenate(self._backlog)
        head, rest = pcm[:max_samples], pcm[max_samples:]
        self._backlog = [rest] if rest.size else []
        self._backlog_samples = rest.size
        return head

    def _shed(self) -> None:
        if _ms(self._backlog_samples) <= self._policy.max_lag_ms:
            return
        pcm = np.concatenate(self._backlog)
        keep = self._policy.keep_ms * SAMPLE_RATE // 1000
        dropped = pcm.size - keep
        self._backlog = [pcm[dropped:]]
        self._backlog_samples = keep
        self._dropped_ms += _ms(dropped)
        self._offset_ms += _ms(dropped)
        emit(self.notice, f"transcription fell behind: skipped {dropped / SAMPLE_RATE:.1f} s of audio")

    def _next_segment(self) -> None:
        # The new segment's t=0 is the first sample still waiting (everything earlier was fed or shed).
        self._stream_text_len = 0
        self._offset_ms = _ms(self._audio_samples - self._backlog_samples)

    def _handle(self, update: StreamUpdate, final: bool) -> None:
        self._engine_lag_ms = update.lag_ms
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
                ),
            )

    def _emit_stats(self) -> None:
        self._last_stats = time.perf_counter()
        emit(
            self.stats,
            WorkerStats(
                backend=self._backend,
                rtf=round(self._rtf, 3),
                lag_ms=_ms(self._backlog_samples) + self._engine_lag_ms,
                dropped_ms=self._dropped_ms,
                audio_ms=_ms(self._audio_samples),
                delay_ms=self._delay_ms,
            ),
        )
