"""A fake engine with the API of ``captionist.engine`` (Model.stream -> Stream.feed/finish/reset).

Tokens come deterministically from the audio: each complete 80 ms frame whose RMS is above
``threshold`` yields one token ``" w<frame index>"`` stamped with the frame's time. A token is
committed once ``delay_ms`` more audio has arrived (like the real model's look-ahead), or at
``finish``. ``slowdown`` makes ``feed`` spend ``slowdown`` seconds per second of audio (sleep
releases the GIL, as the real engine does), to exercise load shedding. ``fail_after_feeds``
makes the N+1th feed raise ``EngineError``.
"""

from __future__ import annotations

import threading
import time

import numpy as np

from captionist.engine import SAMPLE_RATE, TOKEN_MS, EngineError, StreamUpdate, Token, delay_ms_to_tokens

FRAME = SAMPLE_RATE * TOKEN_MS // 1000


class FakeStream:
    def __init__(self, model: FakeModel, delay_ms: int) -> None:
        self._model = model
        self.delay_ms = delay_ms
        self._delay_frames = delay_ms_to_tokens(delay_ms)
        self._reset_state()

    def _reset_state(self) -> None:
        self._pending = np.zeros(0, np.float32)
        self._frames: list[bool] = []  # voiced flag per complete frame
        self._committed = 0  # frames already turned into tokens
        self._received = 0
        self._tokens: list[Token] = []
        self._revision = 0

    def _commit(self, upto: int, events: list[str]) -> StreamUpdate:
        new: list[Token] = []
        for i in range(self._committed, upto):
            if self._frames[i]:
                new.append(Token(id=1000 + i, piece=f" w{i}", time_ms=i * TOKEN_MS))
        self._committed = max(self._committed, upto)
        if new:
            self._tokens.extend(new)
            self._revision += 1
        return StreamUpdate(
            revision=self._revision,
            text="".join(t.piece for t in self._tokens),
            new_tokens=new,
            token_ids=[t.id for t in self._tokens],
            audio_ms_received=self._received * 1000 // SAMPLE_RATE,
            audio_ms_decoded=self._committed * TOKEN_MS,
            events=events,
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
        n = buf.size // FRAME
        for i in range(n):
            frame = buf[i * FRAME : (i + 1) * FRAME]
            self._frames.append(float(np.sqrt(np.mean(frame.astype(np.float64) ** 2))) > m.threshold)
        self._pending = buf[n * FRAME :]
        return self._commit(max(0, len(self._frames) - self._delay_frames), [])

    def finish(self) -> StreamUpdate:
        self._model.finishes += 1
        if self._pending.size:
            pad = np.concatenate([self._pending, np.zeros(FRAME - self._pending.size, np.float32)])
            self._frames.append(float(np.sqrt(np.mean(pad.astype(np.float64) ** 2))) > self._model.threshold)
            self._pending = np.zeros(0, np.float32)
        return self._commit(len(self._frames), ["finished"])

    def reset(self, delay_ms: int) -> None:
        self._model.resets.append(delay_ms)
        self.delay_ms = delay_ms
        self._delay_frames = delay_ms_to_tokens(delay_ms)
        self._reset_state()


class FakeModel:
    def __init__(
        self,
        path: str = "fake.gguf",
        *,
        threshold: float = 0.01,
        slowdown: float = 0.0,
        fail_after_feeds: int | None = None,
        backend: str = "fake-cpu",
    ) -> None:
        self.path = path
        self.threshold = threshold
        self.slowdown = slowdown
        self.fail_after_feeds = fail_after_feeds
        self.info = {"backend": backend, "name": "fake"}
        self.feeds = 0
        self.finishes = 0
        self.fed_samples = 0
        self.resets: list[int] = []
        self.streams: list[FakeStream] = []
        self._lock = threading.Lock()

    def stream(self, delay_ms: int = 480) -> FakeStream:
        with self._lock:
            s = FakeStream(self, delay_ms)
            self.streams.append(s)
            return s


def expected_words(pcm: np.ndarray, threshold: float = 0.01) -> list[str]:
    """The words the fake engine produces for ``pcm`` fed in one go (computed independently)."""
    n = -(-pcm.size // FRAME)
    padded = np.concatenate([pcm, np.zeros(n * FRAME - pcm.size, np.float32)]).reshape(n, FRAME)
    rms = np.sqrt(np.mean(padded.astype(np.float64) ** 2, axis=1))
    return [f"w{i}" for i in np.flatnonzero(rms > threshold)]
