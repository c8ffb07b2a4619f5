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
