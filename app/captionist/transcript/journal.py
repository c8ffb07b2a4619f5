"""The append-only token journal behind a live session (the crash-safe source of truth).

File layout (UTF-8 JSON lines, one object per line, ``\\n``-terminated)::

    {"type": "session", "version": 1, "started": "2026-11-29T09:30:00", "fmt": "srt",
     "timestamps": true, "max_chars": 42, "max_lines": 2, "pause_ms": 800, "token_ms": 80,
     "meta": {...}}
    {"id": 1234, "p": " Hello", "t": 1520}        # one committed text token: id, piece, time_ms
    {"type": "utterance_end"}                     # the model ended an utterance here
    {"type": "gap", "start_ms": 61000, "end_ms": 68500, "reason": "the engine fell behind"}
                                                  # audio that was dropped, not transcribed
    ...
    {"type": "end", "ended": "2026-11-29T10:02:11"}   # only when the session closed cleanly

Journals written before ``token_ms`` and ``utterance_end`` existed lack them; they were all
Voxtral's (``LEGACY_TOKEN_MS``), and a reader that does not know a record type skips it.

Each ``append_tokens`` call is one write followed by ``os.fsync``, so once it returns the
tokens survive a ``kill -9`` or power loss. A torn last line (killed mid-write) is ignored when
reading; a failed write is truncated away and retried with the next append, so a full disk
never leaves half a line in the middle of the file and never drops a token silently.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from captionist.atomic_file import fsync_dir
from captionist.engine import Token
from captionist.transcript.journal_lock import hold_journal
from captionist.transcript.render import FORMATS
from captionist.transcript.segment import UTTERANCE_END, Item, UtteranceEnd

JOURNAL_SUFFIX = ".journal.jsonl"
JOURNAL_VERSION = 1
LEGACY_TOKEN_MS = 80  # the token duration of journals that do not record one (all were Voxtral's)


class TranscriptWriteError(OSError):
    """A transcript or journal file could not be written (full disk, no permission, ...)."""

    def __init__(self, path: Path, exc: OSError) -> None:
        reason = exc.strerror or str(exc)
        super().__init__(exc.errno, f"cannot write transcript file {path}: {reason}")
        self.path = path

    def __str__(self) -> str:
        return str(self.strerror)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


class JournalWriter:
    """Appends token lines to a new journal file; owned by one thread.

    It keeps a copy of what it wrote in memory (about 50 bytes a token: a few MB for a long day),
    so that ``copy_to`` can go on in another folder when this one's drive is gone.
    """

    def __init__(self, path: Path, header: dict[str, Any]) -> None:
        record = {"type": "session", "version": JOURNAL_VERSION, **header}
        self._start(path, json.dumps(record, ensure_ascii=False, default=str).encode() + b"\n")

    def _start(self, path: Path, first: bytes) -> None:
        """Create ``path`` (it must not exist) holding ``first``; nothing is left there on failure."""
        self.path = path
        self._unsynced = b""
        self._written = bytearray()
        try:
            self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
        except OSError as exc:
            raise TranscriptWriteError(path, exc) from exc
        hold_journal(self._fd)  # recovery leaves a journal alone while it is written (journal_lock)
        try:
            self._append(first)
        except TranscriptWriteError:
            self.close()
            try:
                path.unlink()
            except OSError:
                pass
            raise
        fsync_dir(path.parent)

    def copy_to(self, path: Path) -> JournalWriter:
        """A new journal at ``path`` holding everything appended here, the lines of a failed write
        too; this one is left as it is. Raises ``TranscriptWriteError`` (then no file is left)."""
        copy = object.__new__(JournalWriter)
        copy._start(path, bytes(self._written) + self._unsynced)
        return copy

    def _append(self, data: bytes) -> None:
        self._unsynced += data
        try:
            if os.fstat(self._fd).st_size != len(self._written):
                os.ftruncate(self._fd, len(self._written))  # drop a torn line from a failed write
            _write_all(self._fd, self._unsynced)
            os.fsync(self._fd)
        except OSError as exc:
            raise TranscriptWriteError(self.path, exc) from exc
        self._written += self._unsynced
        self._unsynced = b""

    def append_tokens(self, items: list[Item]) -> None:
        """Durably append ``items`` (text tokens and ``UTTERANCE_END`` markers) and any left from a
        failed call; raises ``TranscriptWriteError``."""
        lines = [
            (
                '{"type": "utterance_end"}'
                if isinstance(t, UtteranceEnd)
                else json.dumps({"id": t.id, "p": t.piece, "t": t.time_ms}, ensure_ascii=False)
            )
            + "\n"
            for t in items
        ]
        self._append("".join(lines).encode())

    def append_gap(self, gap: Gap) -> None:
        """Durably append a gap record (and any lines left from a failed call)."""
        record = {"type": "gap", "start_ms": gap.start_ms, "end_ms": gap.end_ms, "reason": gap.reason}
        self._append(json.dumps(record, ensure_ascii=False).encode() + b"\n")

    def append_end(self, ended: str) -> None:
        self._append(json.dumps({"type": "end", "ended": ended}).encode() + b"\n")

    @property
    def pending_bytes(self) -> int:
        """Bytes not yet durable because the last write failed."""
        return len(self._unsynced)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def seal_journal(path: Path) -> None:
    """Mark a crashed session's journal ended: cut a torn last line, then append an end record."""
    try:
        with open(path, "r+b") as f:
            data = f.read()
            f.truncate(data.rfind(b"\n") + 1)
            f.seek(0, os.SEEK_END)
            f.write(json.dumps({"type": "end", "recovered": True}).encode() + b"\n")
            f.flush()
            os.fsync(f.fileno())
    except OSError as exc:
        raise TranscriptWriteError(path, exc) from exc


@dataclass(frozen=True)
class Gap:
    """Audio from ``start_ms`` to ``end_ms`` (stream time) that was dropped, not transcribed."""

    start_ms: int
    end_ms: int
    reason: str

    def __post_init__(self) -> None:
        if not 0 <= self.start_ms <= self.end_ms:
            raise ValueError(f"a gap must satisfy 0 <= start <= end; got {self.start_ms}..{self.end_ms} ms")

    @property
    def text(self) -> str:
        """What the transcript shows in place of the dropped audio."""
        seconds = (self.end_ms - self.start_ms) / 1000
        return f"[{seconds:.1f} s of audio not transcribed: {self.reason}]"


JournalItem = Item | Gap


# Header values a reader accepts, (default, lowest, highest); anything else takes the default.
_HEADER_INTS: dict[str, tuple[int, int, int]] = {
    "max_chars": (42, 1, 1000),
    "max_lines": (2, 1, 100),
    "pause_ms": (800, 0, 86_400_000),
    "token_ms": (LEGACY_TOKEN_MS, 1, 60_000),
}
DEFAULT_FORMAT = "txt"  # the transcript format of a journal whose header names none it knows
_KNOWN = frozenset({"session", "utterance_end", "gap", "end"})  # record types this version writes
MAX_TIME_MS = 10**10  # about 115 days: a later token or gap time is not a real one


@dataclass
class JournalContents:
    """What a journal holds. ``header`` is cleaned: ``fmt`` is one of ``FORMATS``, ``timestamps``
    a bool, ``max_chars``/``max_lines``/``pause_ms``/``token_ms`` ints in range, ``meta`` a dict of
    plain values. ``problems`` says, one phrase each, what had to be skipped or defaulted."""

    header: dict[str, Any]
    items: list[JournalItem] = field(default_factory=list)  # tokens, UTTERANCE_END and gaps, in order
    finished: bool = False
    skipped_lines: list[int] = field(default_factory=list)  # 1-based numbers of unreadable lines
    torn_tail: bool = False  # the last line was cut short (killed mid-write) and is ignored
    problems: list[str] = field(default_factory=list)

    @property
    def tokens(self) -> list[Token]:
        return [t for t in self.items if isinstance(t, Token)]

    @property
    def token_ms(self) -> int:
        return int(self.header["token_ms"])

    @property
    def fmt(self) -> str:
        return str(self.header["fmt"])


def _is_int(value: Any) -> bool:
    return type(value) is int


def _plain(value: Any) -> bool:
    if isinstance(value, list):
        return all(isinstance(v, str) for v in value)
    return value is None or isinstance(value, (str, int, float, bool))


def _clean_header(raw: dict[str, Any], problems: list[str]) -> dict[str, Any]:
    header: dict[str, Any] = {"type": "session"}
    fmt = raw.get("fmt", DEFAULT_FORMAT)
    if isinstance(fmt, str) and fmt.lower() in FORMATS:
        header["fmt"] = fmt.lower()
    else:
        header["fmt"] = DEFAULT_FORMAT
        problems.append(f"unknown transcript format {str(fmt)[:40]!r}, written as {DEFAULT_FORMAT}")
    timestamps = raw.get("timestamps", True)
    header["timestamps"] = timestamps if isinstance(timestamps, bool) else True
    for key, (default, low, high) in _HEADER_INTS.items():
        value = raw.get(key, default)
        header[key] = value if _is_int(value) and low <= value <= high else default
    for key in ("started", "ended"):
        if isinstance(raw.get(key), str):
            header[key] = raw[key]
    meta = raw.get("meta")
    header["meta"] = {k: v for k, v in meta.items() if _plain(v)} if isinstance(meta, dict) else {}
    return header


def _record_item(rec: Any) -> JournalItem | None:
    """The item one journal line holds; None if it is not a valid record."""
    if not isinstance(rec, dict):
        return None
    kind = rec.get("type")
    if kind == "utterance_end":
        return UTTERANCE_END
    if kind == "gap":
        start, end, reason = rec.get("start_ms"), rec.get("end_ms"), rec.get("reason")
        if _is_int(start) and _is_int(end) and isinstance(reason, str) and 0 <= start <= end <= MAX_TIME_MS:
            return Gap(start, end, reason)
        return None
    if kind is None:
        tid, piece, t = rec.get("id"), rec.get("p"), rec.get("t")
        if _is_int(tid) and isinstance(piece, str) and _is_int(t) and 0 <= t <= MAX_TIME_MS:
            return Token(tid, piece, t)
    return None


def _parse_line(line: bytes) -> Any:
    """The JSON value of one line; ``ValueError`` for bad JSON, bad UTF-8 or nesting too deep."""
    try:
        return json.loads(line)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def read_journal(path: Path) -> JournalContents:
    """Read a journal, keeping every valid record and skipping (and counting) only bad lines.

    A torn final line is ignored. A line that is not JSON, not UTF-8, or not a valid record (a
    token without an id, a negative time, ...) is skipped and its number listed in
    ``skipped_lines``. A record type this version does not know is skipped silently (a newer
    version's). An unreadable header line is replaced by defaults as long as some later line is a
    valid record. Raises ``ValueError`` (one line) only when the file cannot be read or holds
    nothing of a session journal.
    """
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise ValueError(f"cannot read journal {path}: {exc.strerror or exc}") from None
    lines = raw.split(b"\n")
    complete, tail = lines[:-1], lines[-1]  # ``tail`` is b"" unless the last write was torn
    problems: list[str] = []
    try:
        first = _parse_line(complete[0]) if complete else None
    except ValueError:
        first = None
    header_ok = isinstance(first, dict) and first.get("type") == "session"
    out = JournalContents(header={}, torn_tail=bool(tail.strip()), problems=problems)
    for n, line in enumerate(complete[1:], start=2):
        try:
            rec = _parse_line(line)
        except ValueError:
            out.skipped_lines.append(n)
            continue
        item = _record_item(rec)
        if item is not None:
            out.items.append(item)
            out.finished = False  # an end record counts only as the last record
        elif isinstance(rec, dict) and rec.get("type") == "end":
            out.finished = True
        elif not (isinstance(rec, dict) and isinstance(rec.get("type"), str) and rec["type"] not in _KNOWN):
            out.skipped_lines.append(n)  # not a record, or a known kind of record that is malformed
    if not header_ok and not out.items:
        raise ValueError(f"{path} is empty or not a captionist session journal")
    if not header_ok:
        problems.append("its first line (the session header) is unreadable; defaults used")
    out.header = _clean_header(first if header_ok else {}, problems)
    if out.skipped_lines:
        n = len(out.skipped_lines)
        problems.append(f"{n} unreadable line{'s' if n != 1 else ''} skipped")
    if out.torn_tail:
        problems.append("a last line cut short by the crash was ignored")
    return out
