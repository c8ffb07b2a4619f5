"""Writing and removing a login entry that is a file (XDG autostart, macOS LaunchAgent).

``write_entry`` writes beside the target and renames over it, so a crash or a full disk never
leaves half an entry; ``remove_entry`` treats an entry already gone as removed. Both raise
``LoginItemError`` with one line for Preferences.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from captionist.autostart.login_item import LoginItemError


def write_entry(path: Path, data: bytes) -> None:
    """``data`` as the file ``path`` (its folder created), atomically."""
    temporary = path.with_name(f".{path.name}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary.write_bytes(data)
        os.replace(temporary, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise LoginItemError(f"could not write {path}: {exc.strerror or exc}") from exc


def remove_entry(path: Path) -> None:
    """Delete ``path``; nothing to do if it is gone already."""
    try:
        path.unlink()
    except FileNotFoundError:
        return
    except OSError as exc:
        raise LoginItemError(f"could not remove {path}: {exc.strerror or exc}") from exc
