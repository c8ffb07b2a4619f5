"""A fake engine with the API of ``captionist.engine`` (``Model`` info properties, ``Model.stream``
-> ``Stream.feed/finish/set_latency/set_language/set_delay/reset``), for tests that are about the
app rather than the model.

Tokens come deterministically from the audio: each complete ``token_ms`` frame whose RMS is above
``threshold`` yields one token ``" w<frame index>"`` (``" <language>-w<frame index>"`` while a
language other than the default is chosen) stamped with the frame's time. A token is committed
once ``latency_ms`` more audio has arrived (like the real model's look-ahead), or at ``finish``.

``eou_after_ms``: after that much silence following speech the stream reports
``StreamEvent.END_OF_UTTERANCE``, with an end-of-utterance control token (id ``eou_id``, as
FastConformer Parakeet-EOU does) when ``eou_id >= 0``, without one (as Voxtral does) otherwise.
``slowdown`` makes ``feed`` spend ``slowdown`` seconds per second of audio (sleep releases the
GIL, as the real engine does), to exercise load shedding. ``fail_after_feeds`` makes the N+1th
feed raise ``EngineError``. ``set_latency``/``set_language`` close a segment the way the real
``Stream`` does: text and token times continue across segments.
"""

from __future__ import annotations

import threading
import time

import numpy as np

from captionist.engine import (
    SAMPLE_RATE,
    EngineError,
    StreamEvent,
    StreamUpdate,
    Token,
    resolve_language,
    resolve_latency,
)


class FakeStream:
    def __init__(self, model: FakeModel, latency_ms: int, language: str) -> None:
        self._model = model
        self.latency_ms = latency_ms
        self._language = language
        self.text = ""
        self.token_ids: list[int] = []
        self.revision = 0
        self._frames_before = 0  # frames of earlier segments: token times continue across segments
        self._reset_segment()

    @property
    def delay_ms(self) -> int:
        return self.latency_ms

    @property
    def language(self) -> str | None:
        return self._language or None

    def _reset_segment(self) -> None:
        self._pending = np.zeros(0, np.float32)
        self._frames: list[bool] = []  # voiced flag per complete frame of this segment
        self._committed = 0  # frames of this segment already turned into tokens
        self._received = 0  # samples of this segment
        self._silent_run = 0
        self._spoke = False

    def _token(self, frame: int) -> Token:
        m = self._model
        i = self._frames_before + frame
        lang = "" if not self._language or self._language == m.default_language else f"{self._language}-"
        return Token(id=1000 + i, piece=f" {lang}w{i}", time_ms=i * m.token_ms)

    def _commit(self, upto: int, last: list[StreamEvent]) -> StreamUpdate:
        """Tokens of frames up to ``upto``, an end of utterance where a pause reaches
        ``eou_after_ms``, then the ``last`` events (the engine's FINISHED/SEGMENT_END come last)."""
        m = self._model
        new: list[Token] = []
        events: list[StreamEvent] = []
        event_at: list[int] = []
        for i in range(self._committed, upto):
            if self._frames[i]:
                new.append(self._token(i))
                self._silent_run, self._spoke = 0, True
                continue
            self._silent_run += 1
            if m.eou_after_ms is not None and self._spoke and self._silent_run * m.token_ms == m.eou_after_ms:
                self._spoke = False
                if m.eou_id >= 0:
                    t = (self._frames_before + i) * m.token_ms
                    new.append(Token(id=m.eou_id, piece="", time_ms=t, is_control=True))
                events.append(StreamEvent.END_OF_UTTERANCE)
                event_at.append(len(new))
        events += last
        event_at += [len(new)] * len(last)
        self._committed = max(self._committed, upto)
        added = "".join(t.piece for t in new)
        if added:
            self.text += added
            self.revision += 1
        self.token_ids += [t.id for t in new]
        before_ms = self._frames_before * m.token_ms
        return StreamUpdate(
            revision=self.revision,
            text=self.text,
            new_tokens=new,
            token_ids=list(self.token_ids),
            audio_ms_received=before_ms + self._received * 1000 // SAMPLE_RATE,
            audio_ms_decoded=before_ms + self._committed * m.token_ms,
            events=events,
            event_at=event_at,
        )

    def feed(self, pcm: np.ndarray) -> StreamUpdate:
        m = self._model
        m.feeds += 1
        m.fed_samples += pcm.size
        if m.fail_after_feeds is not None and m.feeds > m.fail_after_feeds:
            raise EngineError("fake engine failure")
        if m.slowdown:
            time.sleep(m.slowdown * pcm.size / SAMPLE_RATE)
        self._received += pcm.size
        buf = np.concatenate([self._pending, pcm.astype(np.float32)])
        n = buf.size // m.frame
        for i in range(n):
            frame = buf[i * m.frame : (i + 1) * m.frame]
            self._frames.append(float(np.sqrt(np.mean(frame.astype(np.float64) ** 2))) > m.threshold)
        self._pending = buf[n * m.frame :]
        return self._commit(max(0, len(self._frames) - self.latency_ms // m.token_ms), [])

    def _finish_segment(self, event: StreamEvent) -> StreamUpdate:
        m = self._model
        m.finishes += 1
        if self._pending.size:
            pad = np.concatenate([self._pending, np.zeros(m.frame - self._pending.size, np.float32)])
            self._frames.append(float(np.sqrt(np.mean(pad.astype(np.float64) ** 2))) > m.threshold)
            self._pending = np.zeros(0, np.float32)
        return self._commit(len(self._frames), [event])

    def finish(self) -> StreamUpdate:
        return self._finish_segment(StreamEvent.FINISHED)

    def _new_segment(self, latency_ms: int, language: str) -> StreamUpdate:
        update = self._finish_segment(StreamEvent.SEGMENT_END)
        self._frames_before += len(self._frames)
        self.latency_ms, self._language = latency_ms, language
        self._reset_segment()
        return update

    def set_latency(self, latency_ms: int) -> StreamUpdate:
        latency_ms = self._model.resolve_latency(latency_ms)
        self._model.latency_changes.append(latency_ms)
        return self._new_segment(latency_ms, self._language)

    def set_delay(self, delay_ms: int) -> StreamUpdate:
        return self.set_latency(delay_ms)

    def set_language(self, language: str | None) -> StreamUpdate:
        language = self._model.resolve_language(language)
        self._model.language_changes.append(language)
        return self._new_segment(self.latency_ms, language)

    def reset(self, latency_ms: int | None = None, *, delay_ms: int | None = None) -> None:
        if latency_ms is not None or delay_ms is not None:
            self.latency_ms = self._model.resolve_latency(latency_ms, delay_ms)
        self.text, self.token_ids, self.revision, self._frames_before = "", [], 0, 0
        self._reset_segment()


class FakeModel:
    def __init__(
        self,
        path: str = "fake.gguf",
        *,
        threshold: float = 0.01,
        slowdown: float = 0.0,
        fail_after_feeds: int | None = None,
        backend: str = "fake-cpu",
        latencies_ms: tuple[int, ...] = (240, 480, 960),
        default_latency_ms: int = 480,
        languages: tuple[str, ...] = (),
        default_language: str | None = None,
        token_ms: int = 80,
        eou_after_ms: int | None = None,
        eou_id: int = -1,
        architecture: str = "fake",
        name: str = "Fake model",
    ) -> None:
        self.path = path
        self.threshold = threshold
        self.slowdown = slowdown
        self.fail_after_feeds = fail_after_feeds
        self.latencies_ms = tuple(latencies_ms)
        self.default_latency_ms = default_latency_ms
        self.languages = tuple(languages)
        self.default_language = default_language if languages else None
        self.punctuation = False
        self.token_ms = token_ms
        self.frame = SAMPLE_RATE * token_ms // 1000
        self.eou_after_ms = eou_after_ms
        self.eou_id = eou_id
        self.architecture = architecture
        self.info = {
            "backend": backend,
            "name": name,
            "architecture": architecture,
            "variant": architecture,
            "latencies_ms": list(self.latencies_ms),
            "default_latency_ms": default_latency_ms,
            "languages": list(self.languages),
            "default_language": self.default_language or "",
            "punctuation": False,
            "end_of_utterance": eou_after_ms is not None,
            "eou_id": eou_id,
            "token_ms": token_ms,
        }
        self.feeds = 0
        self.finishes = 0
        self.fed_samples = 0
        self.latency_changes: list[int] = []
        self.language_changes: list[str] = []
        self.streams: list[FakeStream] = []
        self._lock = threading.Lock()

    def resolve_latency(self, latency_ms: int | None = None, delay_ms: int | None = None) -> int:
        return resolve_latency(self.latencies_ms, self.default_latency_ms, latency_ms, delay_ms)

    def resolve_language(self, language: str | None) -> str:
        return resolve_language(self.languages, language)

    def stream(
        self, latency_ms: int | None = None, language: str | None = None, *, delay_ms: int | None = None
    ) -> FakeStream:
        with self._lock:
            s = FakeStream(self, self.resolve_latency(latency_ms, delay_ms), self.resolve_language(language))
            self.streams.append(s)
            return s


def expected_words(pcm: np.ndarray, threshold: float = 0.01, token_ms: int = 80) -> list[str]:
    """The words the fake engine produces for ``pcm`` fed in one go (computed independently)."""
    frame = SAMPLE_RATE * token_ms // 1000
    n = -(-pcm.size // frame)
    padded = np.concatenate([pcm, np.zeros(n * frame - pcm.size, np.float32)]).reshape(n, frame)
    rms = np.sqrt(np.mean(padded.astype(np.float64) ** 2, axis=1))
    return [f"w{i}" for i in np.flatnonzero(rms > threshold)]
