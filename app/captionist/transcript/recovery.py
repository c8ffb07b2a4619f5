"""Crash recovery: rebuild the transcripts of sessions that did not close, from their journals.

Usage::

    from captionist.transcript.recovery import recover_sessions
    report = recover_sessions(folder)      # never raises
    report = recover_folders([folder, *remembered_folders()])   # several, each searched once
    if report.message():
        window.show_recovery_notice(report.message(), report.latest)

Rules, per ``*.journal.jsonl`` in the folder whose session did not end:

* every valid record is kept; bad lines are skipped and counted (``read_journal``), and a journal
  with skipped lines is then set aside as ``<journal>.unreadable`` so its raw bytes are not lost;
* the transcript is rebuilt in the session's format. It never shrinks: if the file on disk is
  longer than the rebuild, it stays and the rebuild is written beside it as
  ``<stem> (recovered).<fmt>``;
* a journal with no readable session in it is set aside as ``<journal>.unreadable``;
* a session without text leaves nothing (its journal and any empty transcript are removed);
* after a rebuild the journal is marked ended, and removed or moved to the archive like
  ``SessionWriter.close`` does (``journal_needed``, ``captionist.transcript.archive``);
* a finished journal still needed that lies beside its transcript (the archive could not be
  written, or an older version left it there) is moved to the archive, silently;
* a file that cannot be written or renamed is reported and left as it is, to be tried next start;
* with ``started_before`` (the app's start), a journal named after a later time is a session of
  this run, still being written (recovery may run while a session starts): it is left alone, as
  is a journal a writer holds (``journal_lock``: another process's ``captionist live``);
* a journal left behind on a disk that stopped answering, whose whole session another folder holds
  (``transcript.abandoned``), is removed with its transcript instead of being rebuilt a second time.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from pathlib import Path

from captionist.atomic_file import fsync_dir
from captionist.transcript.abandoned import forget_abandoned, taken_over_by
from captionist.transcript.archive import archive_journal
from captionist.transcript.folders import folder_key
from captionist.transcript.journal import (
    JOURNAL_SUFFIX,
    JournalContents,
    TranscriptWriteError,
    read_journal,
    seal_journal,
)
from captionist.transcript.journal_lock import journal_in_use
from captionist.transcript.render import render
from captionist.transcript.session import (
    STEM_FORMAT,
    captions_of_contents,
    journal_needed,
    remove_quietly,
    write_atomic,
)

UNREADABLE_SUFFIX = ".unreadable"


class RecoveryOutcome(Enum):
    """What recovery did with one journal."""

    REBUILT = "rebuilt"  # the transcript was rebuilt from the journal
    KEPT_LONGER = "kept longer"  # the transcript on disk was longer; the rebuild went beside it
    NO_TEXT = "no text"  # the session had no words; nothing is left of it
    SET_ASIDE = "set aside"  # the journal could not be read at all; renamed to *.unreadable
    FAILED = "failed"  # a file could not be written or renamed; left for the next start
    TAKEN_OVER = "taken over"  # a half copy left on a disk that stopped answering; removed


@dataclass(frozen=True)
class RecoveredSession:
    journal: Path
    outcome: RecoveryOutcome
    transcript: Path | None = None  # the transcript the user should look at (REBUILT, KEPT_LONGER)
    detail: str = ""  # one line: what was skipped or why it failed
    aside: Path | None = None  # where the journal was set aside, if it was

    @property
    def aside_name(self) -> str:
        return self.aside.name if self.aside is not None else ""


@dataclass
class RecoveryReport:
    sessions: list[RecoveredSession] = field(default_factory=list)

    def of(self, outcome: RecoveryOutcome) -> list[RecoveredSession]:
        return [s for s in self.sessions if s.outcome is outcome]

    @property
    def transcripts(self) -> list[Path]:
        """The recovered transcripts, oldest session first."""
        return [s.transcript for s in self.sessions if s.transcript is not None]

    @property
    def latest(self) -> Path | None:
        """The newest recovered transcript (what "Export last session…" offers)."""
        return self.transcripts[-1] if self.transcripts else None

    def message(self) -> str | None:
        """What the user is told, or None when there was nothing to recover."""
        parts = []
        for s in self.sessions:
            detail = f" ({s.detail})" if s.detail else ""
            if s.outcome is RecoveryOutcome.REBUILT and s.transcript is not None:
                parts.append(f"recovered the interrupted session {s.transcript.name}{detail}")
            elif s.outcome is RecoveryOutcome.KEPT_LONGER and s.transcript is not None:
                parts.append(f"kept {s.transcript.name}, which holds more than its journal{detail}")
            elif s.outcome is RecoveryOutcome.SET_ASIDE:
                parts.append(
                    f"could not read {s.journal.name} ({s.detail}); it is set aside as {s.aside_name}"
                )
            elif s.outcome is RecoveryOutcome.FAILED:
                parts.append(f"could not recover {s.journal.name}: {s.detail}")
            elif s.outcome is RecoveryOutcome.TAKEN_OVER:
                parts.append(f"removed the half copy of a session left in {s.journal.parent} ({s.detail})")
        return " ".join(p[:1].upper() + p[1:] + "." for p in parts) or None


def _free_name(path: Path) -> Path:
    candidate, n = path, 1
    while candidate.exists():
        n += 1
        candidate = path.with_name(f"{path.name}.{n}")
    return candidate


def set_aside(journal: Path) -> Path:
    """Rename ``journal`` to ``<name>.unreadable`` (``.unreadable.2``, ... if taken); raises ``OSError``."""
    dest = _free_name(journal.with_name(journal.name + UNREADABLE_SUFFIX))
    os.replace(journal, dest)
    fsync_dir(journal.parent)
    return dest


def _size(path: Path) -> int:
    """The size of the transcript at ``path`` (0 if there is none); ``OSError`` if it is not a file."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return 0
    if not stat.S_ISREG(st.st_mode):
        raise OSError(errno.EEXIST, f"{path} exists and is not a regular file")
    return st.st_size


def _transcript_beside(journal: Path, fmt: str) -> Path:
    """The transcript file of ``journal``'s session in ``fmt``: same folder, same stem."""
    return journal.with_name(f"{journal.name[: -len(JOURNAL_SUFFIX)]}.{fmt}")


def _recover_one(journal: Path, contents: JournalContents) -> RecoveredSession:
    captions, header = captions_of_contents(contents)
    fmt = contents.fmt
    dest = _transcript_beside(journal, fmt)
    if not captions:
        if _size(dest) == 0:
            remove_quietly(dest)
            remove_quietly(journal)
            return RecoveredSession(journal, RecoveryOutcome.NO_TEXT)
        seal_journal(journal)  # the transcript has what the journal lost: keep both as they are
        return RecoveredSession(journal, RecoveryOutcome.KEPT_LONGER, dest, "; ".join(contents.problems))
    text = render(fmt, captions, timestamps=header["timestamps"], meta=header["meta"])
    outcome = RecoveryOutcome.REBUILT
    notes = list(contents.problems)
    if len(text.encode()) < _size(dest):  # never replace a transcript with a shorter one
        beside = _free_name(dest.with_name(f"{dest.stem} (recovered).{fmt}"))
        write_atomic(beside, text)
        outcome = RecoveryOutcome.KEPT_LONGER
        notes.append(f"what the journal holds is in {beside.name}")
    else:
        write_atomic(dest, text)
    seal_journal(journal)
    aside = None
    if contents.skipped_lines:
        aside = set_aside(journal)
        notes.append(f"the journal is kept as {aside.name}")
    elif outcome is RecoveryOutcome.REBUILT and not journal_needed(fmt, header["timestamps"]):
        remove_quietly(journal)
    elif outcome is RecoveryOutcome.REBUILT:
        _archive_quietly(journal, dest)
    return RecoveredSession(journal, outcome, dest, "; ".join(notes), aside)


def _remove_half_copy(journal: Path, contents: JournalContents, whole: Path) -> RecoveredSession:
    """``journal`` was left behind when its disk stopped answering; ``whole`` has all of it."""
    remove_quietly(_transcript_beside(journal, contents.fmt))
    remove_quietly(journal)
    forget_abandoned(journal)
    return RecoveredSession(journal, RecoveryOutcome.TAKEN_OVER, detail=f"the whole session is in {whole}")


def _archive_quietly(journal: Path, transcript: Path) -> None:
    """Move a finished, still needed journal to the archive; if it cannot be, it stays (next start)."""
    try:
        archive_journal(journal, transcript)
    except TranscriptWriteError:
        pass


def _tidy_finished(journal: Path, contents: JournalContents) -> None:
    """A finished journal beside its transcript: move it to the archive if only it can export the
    transcript (``journal_needed``); any other is left as it is."""
    transcript = _transcript_beside(journal, contents.fmt)
    if journal_needed(contents.fmt, contents.header["timestamps"]) and transcript.is_file():
        _archive_quietly(journal, transcript)


def _started_at(journal: Path) -> datetime | None:
    """The start time a session journal is named after (None: not named that way)."""
    try:
        return datetime.strptime(journal.name[: len("2026-01-01 00-00-00")], STEM_FORMAT)
    except ValueError:
        return None


def _of_this_run(journal: Path, started_before: datetime | None) -> bool:
    """Whether ``journal`` belongs to a session started at or after ``started_before``."""
    if started_before is None:
        return False
    started = _started_at(journal)
    return started is not None and started >= started_before.replace(microsecond=0)


def recover_sessions(folder: Path, started_before: datetime | None = None) -> RecoveryReport:
    """Recover every unfinished session in ``folder`` (see the module rules); never raises."""
    report = RecoveryReport()
    try:
        journals = sorted(Path(folder).glob(f"*{JOURNAL_SUFFIX}"))
    except OSError:
        return report
    for journal in journals:
        if _of_this_run(journal, started_before) or journal_in_use(journal):
            continue  # a session being written (by this run, or by `captionist live` elsewhere)
        try:
            contents = read_journal(journal)
        except ValueError as exc:
            why = str(exc).replace(f" {journal}", "").replace(str(journal), "it")
            try:
                aside = set_aside(journal)
            except OSError as err:
                report.sessions.append(
                    RecoveredSession(journal, RecoveryOutcome.FAILED, detail=f"{why}; {err.strerror or err}")
                )
            else:
                outcome = RecoveredSession(journal, RecoveryOutcome.SET_ASIDE, detail=why, aside=aside)
                report.sessions.append(outcome)
            continue
        if contents.finished:
            _tidy_finished(journal, contents)
            continue
        whole = taken_over_by(journal)
        if whole is not None and whole.is_file():
            report.sessions.append(_remove_half_copy(journal, contents, whole))
            continue
        try:
            report.sessions.append(_recover_one(journal, contents))
        except (TranscriptWriteError, OSError) as exc:
            report.sessions.append(RecoveredSession(journal, RecoveryOutcome.FAILED, detail=str(exc)))
    return report


def recover_folders(
    folders: Iterable[Path],
    started_before: datetime | None = None,
    searching: Callable[[Path], None] = lambda folder: None,
) -> RecoveryReport:
    """``recover_sessions`` for each folder (a folder named twice is searched once), the sessions
    ordered by start time across folders, so ``latest`` is the newest; never raises.
    ``searching(folder)`` is called before each folder is looked at (a slow disk: who waits)."""
    report, seen = RecoveryReport(), set()
    for folder in folders:
        searching(Path(folder))
        key = folder_key(folder)
        if key not in seen:
            seen.add(key)
            report.sessions.extend(recover_sessions(Path(folder), started_before).sessions)
    report.sessions.sort(key=lambda s: s.journal.name)  # journals are named after their start time
    return report
