"""Plain dataclasses the inference worker sends through Qt signals (copied, never shared)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from captionist.engine import StreamEvent, Token
from captionist.pipeline.lag import LagState


def is_text_token(token: Token) -> bool:
    """Whether ``token`` carries caption text (not a control token, not empty): what the caption
    feed and keyword alerts number as a session's text tokens."""
    return not token.is_control and bool(token.piece)


class GapReason(enum.Enum):
    """Why audio was not transcribed; the value is the wording used in the transcript and overlay."""

    FELL_BEHIND = "transcription fell behind"
    SOURCE_LOST = "the audio source was lost"  # every source gone at once: no audio to transcribe
    QUEUE_OVERFLOWED = "the audio queue overflowed"  # captured while the app could not take it


@dataclass(frozen=True)
class AudioGap:
    """Audio dropped without being transcribed, in ms since the session started."""

    start_ms: int
    end_ms: int
    reason: GapReason = GapReason.FELL_BEHIND

    @property
    def seconds(self) -> float:
        return (self.end_ms - self.start_ms) / 1000

    def label(self) -> str:
        """The mark shown where the audio is missing (the transcript file uses the same words)."""
        return f"[{self.seconds:.1f} s of audio not transcribed: {self.reason.value}]"

    def short_label(self) -> str:
        """The mark without its reason, for a caption line too narrow for ``label``."""
        return f"[{self.seconds:.1f} s not transcribed]"


@dataclass(frozen=True)
class CaptionUpdate:
    """One change of the session's committed text.

    ``revision`` increments whenever the text grows; ``text`` is the whole session's committed text
    (across latency and language changes); ``new_text``/``new_tokens`` are what this update
    appended, with token times in ms since the session started; ``events`` are the stream's
    ``StreamEvent`` values; ``utterance_ends`` says where among ``new_tokens`` the model ended an
    utterance (counts of tokens before each end; ``len(new_tokens)``: after them all); ``final``
    marks the last update of a session; ``gap`` (with no tokens) says that audio was dropped here.
    """

    revision: int
    text: str
    new_text: str
    new_tokens: list[Token]
    events: list[StreamEvent] = field(default_factory=list)
    final: bool = False
    utterance_ends: list[int] = field(default_factory=list)
    gap: AudioGap | None = None

    def new_lines(self) -> list[str]:
        """``new_text`` cut where utterances ended: the first part continues the current caption
        line, and each later part (possibly empty) starts a new line. A gap is a line of its own
        (``AudioGap.label``), and the words after it start a new line."""
        if self.gap is not None:
            return ["", self.gap.label(), ""]
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
    audio captured but not yet decoded (capture queue, worker backlog, the chunk in the engine and
    the engine's own latency; see ``captionist.pipeline.lag``), ``backlog_ms`` the part of it still
    waiting to be fed; ``lag_state`` and ``shed_in_s`` (WARNING: seconds until audio is skipped at
    the current growth, None if not growing) say what the load policy is doing; ``dropped_ms`` is
    audio shed so far; ``latency_ms``/``language`` are what the stream uses now (language None: the
    model's own), ``chosen_latency_ms`` what the user chose (lower while the policy raised it)."""

    backend: str
    rtf: float
    lag_ms: int
    dropped_ms: int
    audio_ms: int
    latency_ms: int
    language: str | None = None
    lag_state: LagState = LagState.OK
    backlog_ms: int = 0
    shed_in_s: float | None = None
    chosen_latency_ms: int | None = None


@dataclass(frozen=True)
class SessionSummary:
    text: str
    audio_ms: int
    dropped_ms: int
    error: str | None = None
    gaps: tuple[AudioGap, ...] = ()
