"""The ``Caption`` value shared by segmentation, rendering, parsing and the session writer."""

from __future__ import annotations

from dataclasses import dataclass, field

from captionist.transcript.unspaced import join_lines


@dataclass(frozen=True)
class Caption:
    """One subtitle cue.

    ``start_ms``/``end_ms`` are audio times in milliseconds from the start of the recording
    (``end_ms > start_ms``). ``text`` is UTF-8 text whose lines are separated by ``"\\n"``; it has
    no leading/trailing whitespace and no empty lines. ``starts_utterance``: the model ended an
    utterance just before this cue, so plain-text transcripts put it on a new line. Subtitle
    files do not record it, so it takes no part in comparisons (a parsed file equals its captions).
    """

    start_ms: int
    end_ms: int
    text: str
    starts_utterance: bool = field(default=False, compare=False)

    def __post_init__(self) -> None:
        if self.start_ms < 0 or self.end_ms < self.start_ms:
            raise ValueError(
                f"caption times must satisfy 0 <= start <= end; got {self.start_ms}..{self.end_ms}"
            )

    @property
    def one_line(self) -> str:
        """The text with its line breaks replaced by single spaces (by nothing between Chinese or
        Japanese characters, which are written without spaces)."""
        return join_lines(self.text)
