"""Plain dataclasses the inference worker sends through Qt signals (copied, never shared)."""

from __future__ import annotations

from dataclasses import dataclass, field

from captionist.engine import Token


@dataclass(frozen=True)
class CaptionUpdate:
    """One change of the session's committed text.

    ``revision`` increments whenever the text grows; ``text`` is the whole session's committed text
    (across delay changes); ``new_text``/``new_tokens`` are what this update appended, with token
    times in ms since the session started; ``final`` marks the last update of a session.
    """

    revision: int
    text: str
    new_text: str
    new_tokens: list[Token]
    events: list[str] = field(default_factory=list)
    final: bool = False


@dataclass(frozen=True)
class WorkerStats:
    """Throughput figures: ``rtf`` is compute time / audio time (below 1 keeps up); ``lag_ms`` is
    audio waiting to be fed plus what the engine holds back; ``dropped_ms`` is audio shed so far."""

    backend: str
    rtf: float
    lag_ms: int
    dropped_ms: int
    audio_ms: int
    delay_ms: int


@dataclass(frozen=True)
class SessionSummary:
    text: str
    audio_ms: int
    dropped_ms: int
    error: str | None = None
