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
shares answer ENOLCK) counts as "not in use", as before. Windows has no such advisory lock (its
locks are mandatory and would keep recovery from reading): there only the start-time rule applies.
"""

from __future__ import annotations

import os

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]


def hold_journal(fd: int) -> None:
    """Mark the journal open on ``fd`` as being written; best effort, never raises."""
    if fcntl is None:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        pass


def journal_in_use(path: os.PathLike[str] | str) -> bool:
    """Whether a writer holds the journal at ``path``; False where that cannot be told."""
    if fcntl is None:
        return False
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)  # releases the probe's lock
    return False
