"""Where a live session's transcript is written: the chosen folder, else the default one.

Usage::

    writer, fallback = open_transcript(SessionWriter, chosen, default, "srt", token_ms=80)
    if fallback is not None:        # FolderFallback(chosen, used, why): tell the user where it went
        ...
    moved = move_session(writer, [default, temp], exc)   # a write failed during the session

A transcript folder the user chose can be unusable when a session starts: on a drive that is not
plugged in or a network share that is down, made read-only, or deleted together with its parent.
Refusing to start would cost the user the captions of the meeting they are in, so the session is
written to the default folder instead and the caller says where. The chosen folder is created if it
alone is missing, but never with its parents (``create_parents=False``): a drive's folder is not
made again on the local disk where the drive is not mounted. Errors that are not about the disk
(a bad format: ``ValueError``) are raised as they are, and when the default folder fails too the
``NoTranscriptFolder`` error names both folders.

A folder can also fail during a session (the drive is pulled out, the disk fills up). Then
``move_session`` carries the session over to another folder from the journal's copy in memory, so
the words shown from then on are on a disk again, and a crash later loses nothing.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from captionist.transcript.folders import folder_key


@dataclass(frozen=True)
class FolderFallback:
    """The chosen transcript folder could not be used; the session is written to ``used``."""

    chosen: Path
    used: Path
    why: str  # the system's reason, e.g. "No such file or directory"
    code: int | None = None  # its errno, for ``advice``

    def advice(self) -> str:
        """What the user can do about the chosen folder, in a sentence."""
        if self.code == errno.ENOSPC:
            return "Free some space on its disk, or choose another folder (Preferences…)."
        if self.code in (errno.EACCES, errno.EPERM, errno.EROFS):
            return "Make it writable, or choose another folder (Preferences…)."
        if self.code == errno.ETIMEDOUT:  # its disk stopped answering (pipeline.transcript_saver)
            return "Is its network share reachable? Preferences… can choose another folder."
        return "Is its drive plugged in? Preferences… can choose another folder."

    def text(self) -> str:
        """One line for a terminal."""
        return f"cannot write the transcript to {self.chosen} ({self.why}); it goes to {self.used} instead"


class NoTranscriptFolder(OSError):
    """Neither the chosen nor the default folder can take the transcript."""

    def __str__(self) -> str:
        return str(self.strerror)


def _reason(exc: OSError) -> str:
    """The system's words for ``exc`` (a ``TranscriptWriteError``'s own text also names the path)."""
    return os.strerror(exc.errno) if exc.errno else exc.strerror or str(exc)


def _same(a: Path, b: Path) -> bool:
    return folder_key(a) == folder_key(b)


def open_transcript(
    factory: Callable[..., Any], chosen: Path, default: Path | None, fmt: str, **kwargs: Any
) -> tuple[Any, FolderFallback | None]:
    """``factory(folder, fmt, **kwargs)`` (a ``SessionWriter``) in ``chosen``, else in ``default``.

    ``default`` None, or the same folder as ``chosen``: ``chosen`` only, created with its parents.
    Raises ``NoTranscriptFolder`` (an ``OSError``) when no folder can be written, ``ValueError``
    for bad arguments.
    """
    if default is None or _same(chosen, default):
        return factory(chosen, fmt, **kwargs), None
    try:
        return factory(chosen, fmt, create_parents=False, **kwargs), None
    except OSError as exc:
        why, code = _reason(exc), exc.errno
    try:
        writer = factory(default, fmt, **kwargs)
    except OSError as exc:
        raise NoTranscriptFolder(
            exc.errno, f"not to {chosen} ({why}), nor to {default} ({_reason(exc)})"
        ) from exc
    return writer, FolderFallback(Path(chosen), Path(default), why, code)


def move_session(writer: Any, folders: Sequence[Path], exc: OSError) -> FolderFallback | None:
    """Carry ``writer`` (a ``SessionWriter`` whose folder failed with ``exc``) over to the first of
    ``folders`` that is not its own and takes it (``SessionWriter.move_to``); None if none does."""
    old = writer.path.parent
    for folder in folders:
        if _same(folder, old):
            continue
        try:
            writer.move_to(folder)
        except OSError:
            continue
        return FolderFallback(old, Path(folder), _reason(exc), exc.errno)
    return None
