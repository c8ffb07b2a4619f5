"""macOS: a LaunchAgent, ``~/Library/LaunchAgents/<LABEL>.plist`` with ``RunAtLoad``.

launchd loads every agent of that folder when the user logs in and runs ``ProgramArguments`` (an
argv list: no shell, no quoting). An agent whose ``Label`` is not Captionist's is left alone.
"""

from __future__ import annotations

import plistlib
from collections.abc import Sequence
from pathlib import Path

from captionist.autostart.entry_file import read_entry, remove_own_entry, write_entry
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
        content = read_entry(self.path, MAX_PLIST_BYTES)
        if isinstance(content, LoginItemState):
            return content
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
        remove_own_entry(self.path, self.state(), self.location())
