"""The command a login item runs: the frozen bundle's executable, else this Python with ``-m captionist``,
with ``--in-tray``: at login the app waits in the tray instead of opening its window."""

from __future__ import annotations

import sys
from pathlib import Path

from captionist import frozen

IN_TRAY = "--in-tray"  # the desktop app starts with its window closed to the tray (captionist.__main__)


def launch_command(
    *, is_frozen: bool | None = None, executable: str | None = None, platform: str = sys.platform
) -> list[str]:
    """argv that starts the desktop app the way this process was installed.

    Frozen (PyInstaller): the bundle's executable itself. A pip install: ``sys.executable -m
    captionist``, which works in a virtual environment whether or not its ``bin`` is on PATH; on
    Windows ``pythonw.exe`` beside ``python.exe`` when there is one, so no console window opens."""
    is_frozen = frozen.is_frozen() if is_frozen is None else is_frozen
    exe = executable or sys.executable
    if is_frozen:
        return [exe, IN_TRAY]
    if platform == "win32":
        path = Path(exe)
        windowed = path.with_name("pythonw.exe")
        if path.name.lower() == "python.exe" and windowed.is_file():
            exe = str(windowed)
    return [exe, "-m", "captionist", IN_TRAY]
