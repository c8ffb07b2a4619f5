"""Replacing a file whole, so that a reader (or a crash) sees the old file or the new one, never half.

Usage::

    replace_file(path, text, durable=True)            # transcripts, settings: synced to disk
    replace_file(path, text, durable=False)           # the OBS captions file: a view, rewritten often
    replace_file(path, data, durable=False, hidden_temp=True)   # login entries in watched folders

The data goes to a temporary file beside ``path`` (same folder, so the rename stays on one file
system), which is then renamed over ``path`` (``os.replace``: atomic on POSIX and Windows). A
failure removes the temporary file where it can and raises the ``OSError`` for the caller to word;
``path`` is untouched then. ``durable`` syncs the file before the rename and the folder after it, so
the new content survives a power cut once the call returns. ``hidden_temp`` names the temporary
``.NAME.tmp``, for folders whose watchers pick up any file that looks like theirs.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


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


def replace_file(path: Path, data: str | bytes, *, durable: bool, hidden_temp: bool = False) -> None:
    """``path`` replaced by ``data`` (text is written as UTF-8 with ``\\n`` line ends); raises OSError."""
    tmp = path.with_name(f".{path.name}.tmp" if hidden_temp else f"{path.name}.tmp")
    raw = data.encode("utf-8") if isinstance(data, str) else data
    try:
        with open(tmp, "wb") as f:
            f.write(raw)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise
    if durable:
        fsync_dir(path.parent)
