"""Whether a journal is being written right now, by this process or another one.

Usage::

    hold_journal(fd)          # the writer, on the journal it just created (released at close)
    journal_in_use(path)      # recovery: True if some writer holds it; never raises

A journal without an end record is either a crashed session's or a running one's. Crash recovery
must rebuild the first and leave the second alone: sealing a running journal and rebuilding its
transcript under the writer's feet would make the writer's later words vanish from the journal.
The start-time rule (``recovery``'s ``started_before``) covers the desktop app's own sessions; a
``captionist live`` running in another process needs this lock.

POSIX: ``flock`` (``LOCK_EX`` by the writer, a non-blocking ``LOCK_SH`` probe by recovery), which
conflicts between open files even within one process. A file system without locks (some network
shares answer ENOLCK) counts as "not in use", as before.

Windows: its byte-range locks are mandatory (a locked byte cannot be read), so the writer locks one
byte at ``LOCK_OFFSET``, far past any journal's data (as SQLite locks its "pending byte"): recovery
still reads the whole journal, and its probe of that byte fails while a writer holds it. Windows
releases a dead process's locks. Each open file has its own locks there too.
"""

from __future__ import annotations

import errno
import os
from typing import Any

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]
try:
    import msvcrt
except ImportError:  # POSIX
    msvcrt = None  # type: ignore[assignment]

LOCK_OFFSET = 0x4000_0000  # 1 GiB, below the 2 GiB msvcrt.locking reaches; a journal is far shorter


def _lock_byte(fd: int, mode: Any) -> None:
    """``msvcrt.locking`` on the byte at ``LOCK_OFFSET``; the file position is kept."""
    here = os.lseek(fd, 0, os.SEEK_CUR)
    os.lseek(fd, LOCK_OFFSET, os.SEEK_SET)
    try:
        msvcrt.locking(fd, mode, 1)
    finally:
        os.lseek(fd, here, os.SEEK_SET)


def hold_journal(fd: int) -> None:
    """Mark the journal open on ``fd`` as being written; best effort, never raises."""
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        elif msvcrt is not None:
            _lock_byte(fd, msvcrt.LK_NBLCK)
    except OSError:
        pass


def journal_in_use(path: os.PathLike[str] | str) -> bool:
    """Whether a writer holds the journal at ``path``; False where that cannot be told."""
    if fcntl is None and msvcrt is None:
        return False
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            return False
        try:
            _lock_byte(fd, msvcrt.LK_NBLCK)
        except OSError as exc:  # EACCES: another open file holds the byte
            return exc.errno in (errno.EACCES, errno.EDEADLOCK)
        _lock_byte(fd, msvcrt.LK_UNLCK)
        return False
    except BlockingIOError:  # flock: a writer holds it
        return True
    except OSError:
        return False
    finally:
        os.close(fd)  # releases the probe's lock
