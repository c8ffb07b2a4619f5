"""Reading, writing and removing a login entry that is a file (XDG autostart, macOS LaunchAgent).

``read_entry`` gives the file's bytes, or the state when there is nothing to parse (none, not a
regular file or too big, unreadable); ``write_entry`` writes beside the target and renames over
it, so a crash or a full disk never leaves half an entry; ``remove_entry`` treats an entry already
gone as removed, and ``remove_own_entry`` removes only Captionist's own. Writing and removing
raise ``LoginItemError`` with one line for Preferences.
"""

from __future__ import annotations

from pathlib import Path

from captionist.atomic_file import replace_file
from captionist.autostart.login_item import LoginItemError, LoginItemState, refuse_unless_ours


def read_entry(path: Path, max_bytes: int) -> bytes | LoginItemState:
    """The entry's bytes; OFF if there is none, FOREIGN if it is not a regular file of at most
    ``max_bytes``, UNREADABLE if it cannot be read."""
    if not path.exists() and not path.is_symlink():
        return LoginItemState.OFF
    try:
        if not path.is_file() or path.stat().st_size > max_bytes:
            return LoginItemState.FOREIGN
        return path.read_bytes()
    except OSError:
        return LoginItemState.UNREADABLE


def write_entry(path: Path, data: bytes) -> None:
    """``data`` as the file ``path`` (its folder created), atomically."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        replace_file(path, data, durable=False, hidden_temp=True)
    except OSError as exc:
        raise LoginItemError(f"could not write {path}: {exc.strerror or exc}") from exc


def remove_entry(path: Path) -> None:
    """Delete ``path``; nothing to do if it is gone already."""
    try:
        path.unlink()
    except FileNotFoundError:
        return
    except OSError as exc:
        raise LoginItemError(f"could not remove {path}: {exc.strerror or exc}") from exc


def remove_own_entry(path: Path, state: LoginItemState, location: str) -> None:
    """Remove the entry at ``path`` if it is Captionist's (``state``); refuse anything else."""
    if state is LoginItemState.OFF:
        return
    refuse_unless_ours(state, location)
    remove_entry(path)
