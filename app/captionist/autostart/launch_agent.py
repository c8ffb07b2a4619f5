"""macOS: a LaunchAgent, ``~/Library/LaunchAgents/<LABEL>.plist`` with ``RunAtLoad``.

launchd loads every agent of that folder when the user logs in and runs ``ProgramArguments`` (an
argv list: no shell, no quoting). An agent whose ``Label`` is not Captionist's is left alone.
"""

from __future__ import annotations

import contextlib
import os
import plistlib
from collections.abc import Sequence
from pathlib import Path

from captionist.autostart.login_item import LoginItemError, LoginItemState, refuse_unless_ours

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
        temporary = self.path.with_name(f".{self.path.name}.tmp")
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            temporary.write_bytes(agent_plist(command))
            os.replace(temporary, self.path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                temporary.unlink()
            raise LoginItemError(f"could not write {self.path}: {exc.strerror or exc}") from exc

    def disable(self) -> None:
        state = self.state()
        if state is LoginItemState.OFF:
            return
        refuse_unless_ours(state, self.location())
        try:
            self.path.unlink()
        except FileNotFoundError:
            return
        except OSError as exc:
            raise LoginItemError(f"could not remove {self.path}: {exc.strerror or exc}") from exc
