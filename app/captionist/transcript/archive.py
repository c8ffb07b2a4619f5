"""The journals of finished sessions that are still needed, kept out of the user's transcript folder.

Usage::

    from captionist.transcript.archive import archive_journal, journal_for
    archive_journal(w.journal_path, w.path)   # after close: <data>/sessions/<stem> <id>.journal.jsonl
    journal_for(w.path)                       # the journal beside the transcript, else the archived one

Markdown and untimed text cannot be parsed back into timed captions, so only a session's journal
can export them to another format ("Export last session…"). Once such a session is finished its
journal moves to ``paths.session_journals_dir()``, named after the transcript's stem and a digest
of the transcript's absolute path (so two folders' transcripts of the same start time stay apart).
The newest ``MAX_ARCHIVED`` journals are kept; older ones are removed. Unfinished journals stay
where they are written, beside the transcript, for crash recovery.
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
from pathlib import Path

from captionist import paths
from captionist.atomic_file import fsync_dir
from captionist.transcript.journal import JOURNAL_SUFFIX, TranscriptWriteError

MAX_ARCHIVED = 50  # finished sessions whose journal is kept for export


def archived_journal_path(transcript: Path) -> Path:
    """Where the journal of the finished session whose transcript is ``transcript`` is kept."""
    transcript = Path(transcript).resolve()
    digest = hashlib.sha256(str(transcript).encode("utf-8", "surrogateescape")).hexdigest()[:12]
    return paths.session_journals_dir() / f"{transcript.stem} {digest}{JOURNAL_SUFFIX}"


def journal_beside(transcript: Path) -> Path:
    """Where a session journal is written while the session runs: next to its transcript."""
    transcript = Path(transcript)
    return transcript.with_name(transcript.stem + JOURNAL_SUFFIX)


def journal_for(transcript: Path) -> Path | None:
    """The journal of ``transcript``'s session: the one beside it (a running or crashed session),
    else the archived one; None when there is neither."""
    for candidate in (journal_beside(transcript), archived_journal_path(transcript)):
        if candidate.is_file():
            return candidate
    return None


def _move(src: Path, dest: Path) -> None:
    try:
        os.replace(src, dest)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        tmp = dest.with_name(dest.name + ".tmp")  # another file system: copy durably, then remove
        try:
            shutil.copyfile(src, tmp)
            with open(tmp, "rb+") as f:
                os.fsync(f.fileno())
            os.replace(tmp, dest)
        except OSError:
            tmp.unlink(missing_ok=True)
            raise
        src.unlink()
    fsync_dir(dest.parent)
    fsync_dir(src.parent)


def prune_archive(keep: int = MAX_ARCHIVED) -> None:
    """Remove all but the ``keep`` most recently written archived journals; never raises."""
    folder = paths.session_journals_dir()
    try:
        journals = [(p.stat().st_mtime_ns, p.name, p) for p in folder.glob(f"*{JOURNAL_SUFFIX}")]
    except OSError:
        return
    for _, _, old in sorted(journals, reverse=True)[keep:]:
        try:
            old.unlink()
        except OSError:
            continue


def archive_journal(journal: Path, transcript: Path) -> Path:
    """Move the finished ``journal`` of ``transcript`` into the archive and prune it; returns where
    it went. Raises ``TranscriptWriteError`` (then the journal is where it was)."""
    dest = archived_journal_path(transcript)
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        _move(Path(journal), dest)
    except OSError as exc:
        raise TranscriptWriteError(dest, exc) from exc
    prune_archive()
    return dest


def remove_session(transcript: Path) -> None:
    """Remove a finished session's transcript and its journal (beside it or archived), e.g. once
    it has been exported elsewhere; a file that cannot be removed is left."""
    for path in (Path(transcript), journal_beside(transcript), archived_journal_path(transcript)):
        try:
            path.unlink(missing_ok=True)
        except OSError:
            continue
