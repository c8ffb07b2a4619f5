"""Timestamp formatting and parsing for the transcript formats (``HH:MM:SS,mmm`` and friends)."""

from __future__ import annotations

import re

_TIME_RE = re.compile(r"^(?:(\d+):)?([0-5]?\d):([0-5]\d)[.,](\d{3})$")


def format_timestamp(ms: int, sep: str = ".") -> str:
    """``ms`` (>= 0) as ``HH:MM:SS<sep>mmm``; hours grow past two digits when needed."""
    if ms < 0:
        raise ValueError(f"timestamp must be >= 0 ms; got {ms}")
    hours, rest = divmod(int(ms), 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    seconds, millis = divmod(rest, 1000)
    return f"{hours:02d}:{minutes:02d}:{seconds:02d}{sep}{millis:03d}"


def format_clock(ms: int) -> str:
    """``ms`` as a short ``MM:SS`` / ``H:MM:SS`` clock for human-readable transcripts."""
    total = int(ms) // 1000
    hours, rest = divmod(total, 3600)
    minutes, seconds = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}" if hours else f"{minutes:02d}:{seconds:02d}"


def parse_timestamp(text: str) -> int:
    """Parse ``[HH:]MM:SS[.,]mmm`` into milliseconds; raises ``ValueError`` with the bad text."""
    m = _TIME_RE.match(text.strip())
    if not m:
        raise ValueError(f"not a timestamp: {text.strip()!r}")
    hours = int(m.group(1) or 0)
    return ((hours * 60 + int(m.group(2))) * 60 + int(m.group(3))) * 1000 + int(m.group(4))
