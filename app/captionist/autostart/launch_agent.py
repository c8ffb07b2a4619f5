"""macOS: a LaunchAgent, ``~/Library/LaunchAgents/<LABEL>.plist`` with ``RunAtLoad``.

launchd loads every agent of that folder when the user logs in and runs ``ProgramArguments`` (an
argv list: no shell, no quoting). An agent whose ``Label`` is not Captionist's is left alone.
"""

from __future__ import annotations

import plistlib
from collections.abc import Sequence
from pathlib import Path

from captionist.autostart.entry_file import remove_entry, write_entry
from captionist.autostart.login_item import LoginItemState, refuse_unless_ours

LABEL = "org.captionist.Captionist"
MAX_PLIST_BYTES = 256 * 1024


def agent_plist(command: Sequence[str]) -> bytes:
    return plistlib.dumps(
        {"Label": LABEL, "ProgramArguments": list(command), "RunAtLoad": True, "ProcessType": "Interactive"}
    )


class LaunchAgent:
    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder or Path.home() / "Library" / "LaunchAgents"
        self.path = self.folder / f"{LABEL}.plist"

    def location(self) -> str:
        return str(self.path)

    def state(self) -> LoginItemState:
        if not self.path.exists() and not self.path.is_symlink():
            return LoginItemState.OFF
        try:
            if not self.path.is_file() or self.path.stat().st_size > MAX_PLIST_BYTES:
                return LoginItemState.FOREIGN
            content = self.path.read_bytes()
        except OSError:
            return LoginItemState.UNREADABLE
        try:
            data = plistlib.loads(content)
        except (ValueError, plistlib.InvalidFileException):
            return LoginItemState.FOREIGN
        ours = isinstance(data, dict) and data.get("Label") == LABEL
        return LoginItemState.ON if ours else LoginItemState.FOREIGN

    def enable(self, command: Sequence[str]) -> None:
        refuse_unless_ours(self.state(), self.location())
        write_entry(self.path, agent_plist(command))

    def disable(self) -> None:
        state = self.state()
        if state is LoginItemState.OFF:
            return
        refuse_unless_ours(state, self.location())
        remove_entry(self.path)
