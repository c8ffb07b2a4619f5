"""Where "Export last session…" writes: the save dialog's file name and the file type chosen there.

Usage::

    filters = export_filters()                              # "TXT (*.txt);;SRT (*.srt);;…"
    dest = export_destination("~/meeting", "SRT (*.srt)")   # Path("~/meeting.srt")

The chosen type sets the extension when the name has none (or one that is no transcript format,
as in "notes.2024"); a name that already ends in a transcript format keeps it, so typing
"notes.vtt" writes WebVTT whatever the filter says.
"""

from __future__ import annotations

from pathlib import Path

from captionist.transcript import FORMATS


def export_filters() -> str:
    """The save dialog's filter list, one entry per transcript format."""
    return ";;".join(filter_of(fmt) for fmt in FORMATS)


def filter_of(fmt: str) -> str:
    return f"{fmt.upper()} ({_pattern(fmt)})"


def _pattern(fmt: str) -> str:
    return f"*.{fmt}"


def format_of_filter(selected_filter: str) -> str | None:
    """The format a filter entry names ("SRT (*.srt)" -> "srt"); None for anything else."""
    for fmt in FORMATS:
        if selected_filter == filter_of(fmt) or _pattern(fmt) in selected_filter:
            return fmt
    return None


def export_destination(name: str | Path, selected_filter: str) -> Path:
    """The file to write: ``name``, with the chosen format's extension added unless it has one."""
    dest = Path(name)
    if dest.suffix.lstrip(".").lower() in FORMATS:
        return dest
    fmt = format_of_filter(selected_filter)
    return dest.with_name(f"{dest.name}.{fmt}") if fmt else dest
