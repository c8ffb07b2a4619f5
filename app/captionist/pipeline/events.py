"""Plain dataclasses the inference worker sends through Qt signals (copied, never shared)."""

from __future__ import annotations

from dataclasses import dataclass, field

from captionist.engine import StreamEvent, Token


@dataclass(frozen=True)
class CaptionUpdate:
    """One change of the session's committed text.

    ``revision`` increments whenever the text grows; ``text`` is the whole session's committed text
    (across latency and language changes); ``new_text``/``new_tokens`` are what this update
    appended, with token times in ms since the session started; ``events`` are the stream's
    ``StreamEvent`` values; ``utterance_ends`` says where among ``new_tokens`` the model ended an
    utterance (counts of tokens before each end; ``len(new_tokens)``: after them all); ``final``
    marks the last update of a session.
    """

    revision: int
    text: str
    new_text: str
    new_tokens: list[Token]
    events: list[StreamEvent] = field(default_factory=list)
    final: bool = False
    utterance_ends: list[int] = field(default_factory=list)

    def new_lines(self) -> list[str]:
        """``new_text`` cut where utterances ended: the first part continues the current caption
        line, and each later part (possibly empty) starts a new line."""
        cuts: list[int] = []
        for k in sorted(set(self.utterance_ends)):
            at = min(len(self.new_text), len("".join(t.piece for t in self.new_tokens[:k])))
            if not cuts or at != cuts[-1]:
                cuts.append(at)
        parts, start = [], 0
        for at in cuts:
            parts.append(self.new_text[start:at])
            start = at
        return parts + [self.new_text[start:]]


@dataclass(frozen=True)
class WorkerStats:
    """Throughput figures: ``rtf`` is compute time / audio time (below 1 keeps up); ``lag_ms`` is
    audio waiting to be fed plus what the engine holds back; ``dropped_ms`` is audio shed so far;
    ``latency_ms``/``language`` are what the stream uses now (language None: the model's own)."""

    backend: str
    rtf: float
    lag_ms: int
    dropped_ms: int
    audio_ms: int
    latency_ms: int
    language: str | None = None


@dataclass(frozen=True)
class SessionSummary:
    text: str
    audio_ms: int
    dropped_ms: int
    error: str | None = None
