"""Parse transcript files back into captions: ``srt``, ``vtt``, ``json`` and timestamped ``txt``.

Plain ``txt`` and ``md`` carry no cue times and cannot be parsed back. Timestamped ``txt`` keeps
one line per caption, so a caption's internal line breaks come back as single spaces.
Malformed input raises ``ValueError`` naming the block or line that is wrong.
"""

from __future__ import annotations

import json
import re

from captionist.transcript.caption import Caption
from captionist.transcript.render import check_format
from captionist.transcript.timecode import parse_timestamp

_TIMING_RE = re.compile(r"^\s*(\S+)\s+-->\s+(\S+)(?:\s+.*)?$")
_TXT_LINE_RE = re.compile(r"^\[(\S+) --> (\S+)\] ?(.*)$")


def _normalize(text: str) -> str:
    return text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")


def _blocks(text: str) -> list[list[str]]:
    blocks: list[list[str]] = []
    cur: list[str] = []
    for line in _normalize(text).split("\n"):
        if line.strip():
            cur.append(line.rstrip())
        elif cur:
            blocks.append(cur)
            cur = []
    if cur:
        blocks.append(cur)
    return blocks


def _cue(timing: str, lines: list[str], where: str) -> Caption:
    m = _TIMING_RE.match(timing)
    if not m:
        raise ValueError(f"{where}: expected 'start --> end', got {timing.strip()!r}")
    try:
        return Caption(parse_timestamp(m.group(1)), parse_timestamp(m.group(2)), "\n".join(lines))
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None


def parse_srt(text: str) -> list[Caption]:
    captions = []
    for n, block in enumerate(_blocks(text), start=1):
        lines = block[1:] if block[0].strip().isdigit() and len(block) > 1 else block
        captions.append(_cue(lines[0], [ln.strip() for ln in lines[1:]], f"srt cue {n}"))
    return captions


def _vtt_unescape(text: str) -> str:
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&nbsp;", "\u00a0").replace("&amp;", "&")


def parse_vtt(text: str) -> list[Caption]:
    blocks = _blocks(text)
    if not blocks or not blocks[0][0].startswith("WEBVTT"):
        raise ValueError("not a WebVTT file: it must start with 'WEBVTT'")
    captions = []
    for n, block in enumerate(blocks[1:], start=1):
        if block[0].split(" ", 1)[0] in ("NOTE", "STYLE", "REGION"):
            continue
        lines = block if "-->" in block[0] else block[1:]
        if not lines:
            raise ValueError(f"vtt block {n}: a cue identifier without timing")
        body = [_vtt_unescape(ln.strip()) for ln in lines[1:]]
        captions.append(_cue(lines[0], body, f"vtt block {n}"))
    return captions


def parse_json(text: str) -> list[Caption]:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON: {exc}") from None
    items = doc.get("captions") if isinstance(doc, dict) else doc
    if not isinstance(items, list):
        raise ValueError("JSON transcript has no 'captions' list")
    captions = []
    for n, item in enumerate(items, start=1):
        try:
            captions.append(Caption(int(item["start_ms"]), int(item["end_ms"]), str(item["text"])))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"JSON caption {n} is malformed: {exc}") from None
    return captions


def parse_txt(text: str) -> list[Caption]:
    captions = []
    for n, line in enumerate(_normalize(text).split("\n"), start=1):
        if not line.strip():
            continue
        m = _TXT_LINE_RE.match(line.strip())
        if not m:
            raise ValueError(
                f"txt line {n} has no '[start --> end]' timestamp; only timestamped txt can be parsed"
            )
        try:
            captions.append(Caption(parse_timestamp(m.group(1)), parse_timestamp(m.group(2)), m.group(3)))
        except ValueError as exc:
            raise ValueError(f"txt line {n}: {exc}") from None
    return captions


def parse(fmt: str, text: str) -> list[Caption]:
    """Captions read from ``text`` in format ``fmt`` (``srt``, ``vtt``, ``json`` or timestamped ``txt``)."""
    fmt = check_format(fmt)
    if fmt == "srt":
        return parse_srt(text)
    if fmt == "vtt":
        return parse_vtt(text)
    if fmt == "json":
        return parse_json(text)
    if fmt == "txt":
        return parse_txt(text)
    raise ValueError("md transcripts cannot be parsed back into captions; use srt, vtt, json or txt")
