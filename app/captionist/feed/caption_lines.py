"""The current caption lines as plain text: what ``/captions.txt`` and the OBS text file show.

Usage::

    lines = CaptionLines()
    lines.add_text(" hello world")    # committed text continues the current line
    lines.new_line()                  # an end of utterance (or a gap's label line)
    lines.current(lines=2, width=42)  # ["hello world"]: the last 2 lines, wrapped at 42 characters

Text is kept per utterance line (the last ``KEEP_LINES`` of them); ``current`` wraps them as
transcripts wrap captions (``transcript.segment.wrap_text``: at spaces, between Chinese and
Japanese characters, ``width`` columns with wide characters counting two; a word longer than that
is cut) and returns the last ``lines``.
Not thread-safe: the hub calls it under its lock.
"""

from __future__ import annotations

from collections import deque

from captionist.transcript.segment import wrap_text

KEEP_LINES = 64


class CaptionLines:
    def __init__(self) -> None:
        self._done: deque[str] = deque(maxlen=KEEP_LINES)
        self._open = ""

    def clear(self) -> None:
        self._done.clear()
        self._open = ""

    def add_text(self, text: str) -> None:
        self._open += text

    def new_line(self) -> None:
        """End the current line (nothing happens while it is still empty)."""
        if self._open.strip():
            self._done.append(self._open.strip())
        self._open = ""

    def add_line(self, text: str) -> None:
        """A line of its own (a gap's label): ends the current line first."""
        self.new_line()
        self._done.append(text)

    def current(self, lines: int = 2, width: int = 42) -> list[str]:
        """The last ``lines`` lines wrapped at ``width`` columns (at least 1 line, 8 columns)."""
        lines, width = max(1, lines), max(8, width)
        source = list(self._done) + ([self._open.strip()] if self._open.strip() else [])
        out: list[str] = []
        for line in source[-lines:]:
            out += wrap_text(line, width) or [""]
        return out[-lines:]
