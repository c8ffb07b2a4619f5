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

Load-shedding policy (``LoadPolicy``): while running, if more than ``max_lag_ms`` of audio waits
to be fed, the oldest waiting audio is dropped so that ``keep_ms`` remains; the drop is reported
as a notice and counted in ``WorkerStats.dropped_ms``, and later token times are shifted by the
dropped amount so they stay on the session clock. Shedding never happens after Stop: everything
captured before Stop is fed and ``finish`` is called, so nothing already spoken is lost.

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
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Protocol

import numpy as np
from PySide6.QtCore import QObject, Signal, Slot

from captionist.engine import SAMPLE_RATE, StreamUpdate
from captionist.pipeline.events import CaptionUpdate, SessionSummary, WorkerStats
from captionist.pipeline.signals import emit
from captionist.pipeline.utterance import utterance_ends


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
        latency_ms: int,
        policy: LoadPolicy | None = None,
        *,
        language: str | None = None,
    ) -> None:
        super().__init__()
        self._provider, self._source, self._control = model_provider, source, control
        self._latency_ms, self._language = latency_ms, language
        self._eou_id = -1
        self._policy = policy or LoadPolicy()
        self._backlog: list[np.ndarray] = []
        self._backlog_samples = 0
        self._base_text = ""  # session text committed by earlier stream segments
        self._stream_text_len = 0
        self._offset_ms = 0  # audio shed so far: session time = stream time + this
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
        info = getattr(model, "info", {}) or {}
        self._backend = str(info.get("backend", "?"))
        self._eou_id = int(info.get("eou_id", -1))
        stream = model.stream(self._latency_ms, self._language)
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
            self._apply(stream, self._control.take_changes())
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

    def _apply(self, stream: Any, changes: dict[str, Any]) -> None:
        """Switch latency and/or language between feeds (each switch closes a stream segment)."""
        latency = changes.get("latency_ms")
        if latency is not None and latency != self._latency_ms:
            try:
                update = stream.set_latency(latency)
            except ValueError as exc:
                emit(self.error, str(exc))
            else:
                self._latency_ms = latency
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
                    utterance_ends=utterance_ends(tokens, update.events, self._eou_id),
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
                latency_ms=self._latency_ms,
                language=self._language,
            ),
        )
