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

from captionist.engine import Token
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


def fsync_dir(folder: Path) -> None:
    """Make a new or renamed directory entry durable (a no-op where directories cannot be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


class JournalWriter:
    """Appends token lines to a new journal file; owned by one thread."""

    def __init__(self, path: Path, header: dict[str, Any]) -> None:
        self.path = path
        self._unsynced = b""
        try:
            self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
        except OSError as exc:
            raise TranscriptWriteError(path, exc) from exc
        self._good_size = 0
        record = {"type": "session", "version": JOURNAL_VERSION, **header}
        try:
            self._append(json.dumps(record, ensure_ascii=False, default=str).encode() + b"\n")
        except TranscriptWriteError:
            self.close()
            raise
        fsync_dir(path.parent)

    def _append(self, data: bytes) -> None:
        self._unsynced += data
        try:
            if os.fstat(self._fd).st_size != self._good_size:
                os.ftruncate(self._fd, self._good_size)  # drop a torn line from a failed write
            _write_all(self._fd, self._unsynced)
            os.fsync(self._fd)
        except OSError as exc:
            raise TranscriptWriteError(self.path, exc) from exc
        self._good_size += len(self._unsynced)
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


@dataclass
class JournalContents:
    header: dict[str, Any]
    items: list[JournalItem] = field(default_factory=list)  # tokens, UTTERANCE_END and gaps, in order
    finished: bool = False

    @property
    def tokens(self) -> list[Token]:
        return [t for t in self.items if isinstance(t, Token)]

    @property
    def token_ms(self) -> int:
        value = self.header.get("token_ms", LEGACY_TOKEN_MS)
        return value if isinstance(value, int) and value > 0 else LEGACY_TOKEN_MS


def read_journal(path: Path) -> JournalContents:
    """Read a journal, ignoring a torn final line; ``ValueError`` if it is not a session journal."""
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise ValueError(f"cannot read journal {path}: {exc.strerror or exc}") from None
    lines = raw.split(b"\n")
    complete, tail = lines[:-1], lines[-1]  # ``tail`` is b"" unless the last write was torn
    del tail
    if not complete:
        raise ValueError(f"{path} is empty or not a session journal")
    try:
        header = json.loads(complete[0])
    except json.JSONDecodeError:
        header = None
    if not isinstance(header, dict) or header.get("type") != "session":
        raise ValueError(f"{path} is not a captionist session journal")
    out = JournalContents(header=header)
    for n, line in enumerate(complete[1:], start=2):
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            raise ValueError(f"{path}: line {n} is corrupt") from None
        if rec.get("type") == "end":
            out.finished = True
        elif rec.get("type") == "utterance_end":
            out.items.append(UTTERANCE_END)
        elif rec.get("type") == "gap":
            out.items.append(Gap(int(rec["start_ms"]), int(rec["end_ms"]), str(rec["reason"])))
        elif "t" in rec:
            out.items.append(Token(int(rec["id"]), str(rec["p"]), int(rec["t"])))
    return out
