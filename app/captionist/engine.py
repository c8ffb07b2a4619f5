"""Pythonic API over the C++ engine (``captionist._engine``).

Usage::

    from captionist.engine import Model, EngineError
    m = Model("model.gguf", backend="auto", n_threads=None)
    t = m.transcribe(pcm)                 # pcm: 1-D float32, 16 kHz mono
    print(t.text, t.token_ids)

    s = m.stream(delay_ms=480)            # per-stream state; the Model stays shared and read-only
    u = s.feed(chunk)                     # any length; returns a StreamUpdate
    u = s.finish()                        # end of input: decode to the end (== offline result)

Thread safety: a ``Model`` is immutable after load and may be shared by any number of threads.
A ``Stream`` is owned by one thread at a time. The engine releases the GIL while it computes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

SAMPLE_RATE = 16000
TOKEN_MS = 80
DELAY_CHOICES_MS: tuple[int, ...] = tuple(range(80, 1201, 80)) + (2400,)


class EngineError(RuntimeError):
    """A model file, backend or input the engine cannot use; the message says which and why."""


@dataclass(frozen=True)
class Token:
    """One generated token: its id, its text piece ('' for control tokens) and its audio time."""

    id: int
    piece: str
    time_ms: int
    is_control: bool = False


@dataclass(frozen=True)
class Transcript:
    text: str
    token_ids: list[int]
    tokens: list[Token]


@dataclass(frozen=True)
class StreamUpdate:
    """What one ``feed``/``finish`` call changed.

    ``revision`` increments whenever committed text grows; ``text`` is all committed text so far;
    ``new_tokens`` are the tokens committed by this call; ``events`` holds strings such as
    ``"end_of_utterance"`` (the model emitted EOS after a pause; the stream keeps going) and
    ``"finished"``.
    """

    revision: int
    text: str
    new_tokens: list[Token]
    token_ids: list[int]
    audio_ms_received: int
    audio_ms_decoded: int
    events: list[str] = field(default_factory=list)

    @property
    def lag_ms(self) -> int:
        return max(0, self.audio_ms_received - self.audio_ms_decoded)


def delay_ms_to_tokens(delay_ms: int) -> int:
    """Map a delay in ms (80..1200 in steps of 80, or 2400) to ``num_delay_tokens``."""
    if delay_ms not in DELAY_CHOICES_MS:
        raise ValueError(f"delay_ms must be 80..1200 in steps of 80, or 2400; got {delay_ms}")
    return delay_ms // TOKEN_MS


def _engine_module() -> Any:
    try:
        from captionist import _engine
    except ImportError as exc:  # pragma: no cover - only without a built extension
        raise EngineError(f"the compiled engine is not available: {exc}") from exc
    return _engine


def _check_pcm(pcm: Any, *, allow_empty: bool) -> np.ndarray:
    """Validate audio for the engine: a 1-D float32 array of finite samples."""
    if not isinstance(pcm, np.ndarray):
        raise ValueError(f"audio must be a numpy array, got {type(pcm).__name__}")
    if pcm.ndim != 1:
        raise ValueError(f"audio must be 1-D mono samples, got an array of shape {pcm.shape}")
    if pcm.dtype != np.float32:
        raise ValueError(f"audio must be float32 samples at {SAMPLE_RATE} Hz, got dtype {pcm.dtype}")
    if not allow_empty and pcm.size == 0:
        raise ValueError("audio is empty")
    if pcm.size and not np.isfinite(pcm).all():
        bad = int(np.flatnonzero(~np.isfinite(pcm))[0])
        raise ValueError(f"audio sample {bad} is not a finite number (NaN or Inf)")
    return np.ascontiguousarray(pcm)


def _delay_tokens(delay_ms: int | None, default_tokens: int) -> int:
    return default_tokens if delay_ms is None else delay_ms_to_tokens(delay_ms)


class Model:
    """A loaded model file. Immutable and shareable across threads."""

    def __init__(self, path: str | Path, backend: str = "auto", n_threads: int | None = None) -> None:
        if backend not in ("auto", "cpu", "metal", "cuda"):
            raise ValueError(f"backend must be auto, cpu, metal or cuda; got {backend!r}")
        if n_threads is not None and n_threads < 1:
            raise ValueError(f"n_threads must be at least 1, got {n_threads}")
        self.path = Path(path)
        self._m = _engine_module().Model(str(path), backend, n_threads or 0)
        self.info: dict[str, Any] = self._m.info()
        self._n_special: int = self.info["n_special"]

    @property
    def default_delay_ms(self) -> int:
        return int(self.info["default_delay_ms"])

    def token_bytes(self, token_id: int) -> bytes:
        return bytes(self._m.token_bytes(token_id))

    def is_control(self, token_id: int) -> bool:
        return token_id < self._n_special

    def stream(self, delay_ms: int | None = None) -> Stream:
        """A new live stream (its own caches); ``delay_ms`` None = the model's default."""
        return Stream(self, delay_ms)

    def transcribe(self, pcm: np.ndarray, delay_ms: int | None = None) -> Transcript:
        """Offline transcription exactly as the reference does it (EOS ends decoding)."""
        pcm = _check_pcm(pcm, allow_empty=False)
        s = _engine_module().Stream(
            self._m, _delay_tokens(delay_ms, self.info["default_delay_tokens"]), True, False
        )
        tokens: list[Token] = []
        text = ""
        for r in (s.feed(pcm), s.finish()):
            new = self._tokens(r)
            tokens += new
            text += "".join(t.piece for t in new) + r["text_tail"]
        return Transcript(text=text, token_ids=[t.id for t in tokens], tokens=tokens)

    def _tokens(self, result: dict[str, Any]) -> list[Token]:
        return [Token(i, piece, t, i < self._n_special) for i, piece, t in result["new_tokens"]]


class Stream:
    """Incremental transcription of one audio stream. Owned by one thread at a time.

    ``feed`` accepts any number of samples (1 sample or a minute); ``finish`` pads the end and
    decodes to the end, after which the result equals ``Model.transcribe`` of the same audio.
    Live rules beyond the reference:

    - An EOS before ``finish`` never ends the stream: it is reported as an ``"end_of_utterance"``
      event and decoding continues ([STREAMING_PAD] is fed in place of the EOS).
    - Unbounded length: before the decoder reaches its position limit (131072 positions, about
      2.9 h at real dims), preferably at a pause, it starts over with a fresh prompt built from
      silence and the last audio it has seen (``"reanchor"`` event); no text is lost or repeated.
    - ``set_delay`` changes the delay mid-session: the current segment is finished (all audio fed
      so far is transcribed), and decoding continues in a new segment at the new delay. Text and
      token times continue across segments.
    """

    def __init__(self, model: Model, delay_ms: int | None = None) -> None:
        self.model = model
        self._delay_tokens = _delay_tokens(delay_ms, model.info["default_delay_tokens"])
        self._s = _engine_module().Stream(model._m, self._delay_tokens, False, False)
        self._clear()

    def _clear(self) -> None:
        self.revision = 0
        self.text = ""
        self.token_ids: list[int] = []
        self._samples_before = 0  # samples fed in earlier segments
        self._samples = 0  # samples fed in this segment

    @property
    def delay_ms(self) -> int:
        return self._delay_tokens * TOKEN_MS

    def feed(self, pcm: np.ndarray) -> StreamUpdate:
        pcm = _check_pcm(pcm, allow_empty=True)
        update = self._update(self._s.feed(pcm))
        self._samples += pcm.size
        return update

    def set_delay(self, delay_ms: int) -> StreamUpdate:
        """Finish the current segment and continue at ``delay_ms``; committed text is kept."""
        tokens = delay_ms_to_tokens(delay_ms)
        result = self._s.finish()
        result["events"] = ["segment_end" if e == "finished" else e for e in result["events"]]
        update = self._update(result)
        self._s.reset(tokens)
        self._delay_tokens = tokens
        self._samples_before += self._samples
        self._samples = 0
        return update

    def finish(self) -> StreamUpdate:
        return self._update(self._s.finish())

    def timings(self) -> dict[str, float]:
        """Cumulative engine time of this stream: mel_ms, audio_ms (conv + encoder + projector),
        decoder_ms, and the counts n_mel_frames, n_audio_batches, n_audio_tokens, n_decoder_calls,
        n_decoder_positions."""
        return dict(self._s.timings())

    def reset(self, delay_ms: int | None = None) -> None:
        """Start over (optionally with another delay); allocations are kept."""
        tokens = self._delay_tokens if delay_ms is None else delay_ms_to_tokens(delay_ms)
        self._s.reset(tokens)
        self._delay_tokens = tokens
        self._clear()

    def _update(self, result: dict[str, Any]) -> StreamUpdate:
        offset = self._samples_before * 1000 // SAMPLE_RATE
        new = self.model._tokens(result)
        if offset:
            new = [Token(t.id, t.piece, t.time_ms + offset, t.is_control) for t in new]
        added = "".join(t.piece for t in new) + result["text_tail"]
        if added:
            self.text += added
            self.revision += 1
        self.token_ids += [t.id for t in new]
        return StreamUpdate(
            revision=self.revision,
            text=self.text,
            new_tokens=new,
            token_ids=list(self.token_ids),
            audio_ms_received=offset + int(result["audio_ms_received"]),
            audio_ms_decoded=offset + int(result["audio_ms_decoded"]),
            events=list(result["events"]),
        )


def quantize(
    src: str | Path, dst: str | Path, type_name: str, n_threads: int | None = None, progress: Any = None
) -> None:
    """Write ``dst``: ``src`` with its matrices quantized (Q8_0, Q5_K, Q4_K, Q6_K, F16, Q4_K_M, Q5_K_M).

    ``progress(done_bytes, total_bytes)`` is called as tensors are written. Nothing is left at
    ``dst`` on failure.
    """
    _engine_module().quantize(str(src), str(dst), type_name, n_threads or 0, progress)
