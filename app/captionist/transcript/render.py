"""Render captions as text in one of ``FORMATS``.

Every format except ``json`` is built as ``header + fragment(caption 1) + ... + footer``, and the
fragments are exposed so that the live session writer can append one finished caption at a time
and still end up with exactly what ``render`` would have written.

* ``srt``  — numbered SubRip cues, ``HH:MM:SS,mmm``.
* ``vtt``  — WebVTT; ``meta`` goes into a ``NOTE`` block; ``& < >`` are escaped.
* ``txt``  — plain paragraphs (a new paragraph after a pause of ``PARAGRAPH_GAP_MS``, a new line
  where an utterance starts: ``Caption.starts_utterance``), or with ``timestamps=True`` one
  ``[HH:MM:SS.mmm --> HH:MM:SS.mmm] text`` line per caption.
* ``md``   — a Markdown transcript: a title, ``meta`` as a list, then paragraphs (a new one after a
  pause or where an utterance starts; ``timestamps=True``: one ``**[MM:SS]** text`` paragraph per
  caption).
* ``json`` — ``{**meta, "text": ..., "captions": [{"start_ms", "end_ms", "text"}, ...]}``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from captionist.transcript.caption import Caption
from captionist.transcript.timecode import format_clock, format_timestamp
from captionist.transcript.unspaced import join_lines, separator

FORMATS: tuple[str, ...] = ("txt", "srt", "vtt", "json", "md")
PARAGRAPH_GAP_MS = 2000


def check_format(fmt: str) -> str:
    """``fmt`` lower-cased if it is one of ``FORMATS``; otherwise a one-line ``ValueError``."""
    norm = fmt.lower().lstrip(".")
    if norm not in FORMATS:
        raise ValueError(f"unknown transcript format {fmt!r}; choose one of {', '.join(FORMATS)}")
    return norm


def _clean_lines(text: str) -> str:
    return "\n".join(line.strip() for line in text.splitlines() if line.strip())


def _vtt_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _meta_lines(meta: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    if not meta:
        return []
    return [(str(k), " ".join(str(v).split())) for k, v in meta.items() if not isinstance(v, (list, dict))]


def render_header(fmt: str, *, meta: Mapping[str, Any] | None = None) -> str:
    """What a file of format ``fmt`` starts with (``json`` has no incremental form)."""
    fmt = check_format(fmt)
    if fmt == "vtt":
        lines = _meta_lines(meta)
        note = "NOTE\n" + "".join(f"{_vtt_escape(k)}: {_vtt_escape(v)}\n" for k, v in lines) + "\n"
        return "WEBVTT\n\n" + (note if lines else "")
    if fmt == "md":
        title = str((meta or {}).get("title", "Transcript"))
        items = "".join(f"- **{k}:** {v}\n" for k, v in _meta_lines(meta) if k != "title")
        return f"# {title}\n\n" + (items + "\n" if items else "")
    return ""


def render_fragment(
    fmt: str, caption: Caption, index: int, previous: Caption | None, *, timestamps: bool = False
) -> str:
    """The text for caption number ``index`` (1-based); ``previous`` is the caption before it."""
    fmt = check_format(fmt)
    text = _clean_lines(caption.text)
    one_line = join_lines(text)
    if fmt == "srt":
        start, end = format_timestamp(caption.start_ms, ","), format_timestamp(caption.end_ms, ",")
        return f"{index}\n{start} --> {end}\n{text}\n\n"
    if fmt == "vtt":
        start, end = format_timestamp(caption.start_ms), format_timestamp(caption.end_ms)
        return f"{start} --> {end}\n{_vtt_escape(text)}\n\n"
    if fmt == "txt" and timestamps:
        return f"[{format_timestamp(caption.start_ms)} --> {format_timestamp(caption.end_ms)}] {one_line}\n"
    if fmt == "md" and timestamps:
        return f"**[{format_clock(caption.start_ms)}]** {one_line}\n\n"
    if fmt in ("txt", "md"):
        if previous is None:
            return one_line
        if caption.start_ms - previous.end_ms >= PARAGRAPH_GAP_MS:
            return "\n\n" + one_line
        if caption.starts_utterance:  # a new line; in Markdown, a new paragraph
            return ("\n" if fmt == "txt" else "\n\n") + one_line
        return separator(previous.text, one_line) + one_line  # a space, but none in Chinese
    raise ValueError(f"format {fmt!r} is not written caption by caption")


def render_footer(fmt: str, n_captions: int, *, timestamps: bool = False) -> str:
    """What a file of format ``fmt`` ends with, after ``n_captions`` fragments."""
    fmt = check_format(fmt)
    if fmt in ("txt", "md") and not timestamps and n_captions:
        return "\n"
    return ""


def render_json(captions: Sequence[Caption], *, meta: Mapping[str, Any] | None = None) -> str:
    doc: dict[str, Any] = dict(meta or {})
    doc.setdefault("text", join_lines("\n".join(c.one_line for c in captions)))
    doc["captions"] = [{"start_ms": c.start_ms, "end_ms": c.end_ms, "text": c.text} for c in captions]
    return json.dumps(doc, ensure_ascii=False, indent=2, default=str) + "\n"


def render(
    fmt: str,
    captions: Sequence[Caption],
    *,
    timestamps: bool = False,
    meta: Mapping[str, Any] | None = None,
) -> str:
    """The whole document for ``captions`` in format ``fmt`` (one of ``FORMATS``).

    ``timestamps`` only changes ``txt`` and ``md`` (subtitle formats always carry times).
    ``meta`` (e.g. model, delay_ms, started) goes where the format has room for it.
    """
    fmt = check_format(fmt)
    if fmt == "json":
        return render_json(captions, meta=meta)
    parts = [render_header(fmt, meta=meta)]
    previous: Caption | None = None
    for i, cap in enumerate(captions, start=1):
        parts.append(render_fragment(fmt, cap, i, previous, timestamps=timestamps))
        previous = cap
    parts.append(render_footer(fmt, len(captions), timestamps=timestamps))
    return "".join(parts)
