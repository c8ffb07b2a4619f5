"""Linux and the BSDs: an XDG autostart entry, ``$XDG_CONFIG_HOME/autostart/captionist.desktop``.

The desktop environment (GNOME, KDE, Xfce, ...) starts every entry of that folder at login
(freedesktop.org "Desktop Application Autostart Specification"). Captionist's entry carries
``X-Captionist-Autostart=true``; a file without it is someone else's and is left alone. Captionist's
entry switched off by the desktop's own settings (``Hidden=true``, ``X-GNOME-Autostart-enabled=false``)
counts as off, and turning start at login on rewrites it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from captionist.autostart.entry_file import read_entry, remove_own_entry, write_entry
from captionist.autostart.login_item import LoginItemError, LoginItemState, refuse_unless_ours

FILE_NAME = "captionist.desktop"
MARKER = "X-Captionist-Autostart=true"
_RESERVED = set(" \t\n\"'\\><~|&;$*?#()`")  # Desktop Entry spec: an argument with one of these is quoted
_QUOTED_ESCAPES = '"`$\\'  # backslash-escaped inside a quoted argument
MAX_ENTRY_BYTES = 64 * 1024
SWITCHED_OFF = ("Hidden=true", "X-GNOME-Autostart-enabled=false")  # the entry is there but does not run


def autostart_dir(environ: dict[str, str] | None = None, home: Path | None = None) -> Path:
    """``$XDG_CONFIG_HOME/autostart`` (an absolute XDG_CONFIG_HOME only, as the spec says), else
    ``~/.config/autostart``."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_CONFIG_HOME", "")
    if not base or not os.path.isabs(base):
        base = str((home or Path.home()) / ".config")
    return Path(base) / "autostart"


def exec_line(command: Sequence[str]) -> str:
    """``command`` as a Desktop Entry ``Exec`` value: arguments quoted per the spec, ``%`` doubled,
    and the string-level escape of backslashes applied last."""
    parts = []
    for arg in command:
        if "\n" in arg or "\r" in arg or "\0" in arg:
            raise LoginItemError(f"cannot start {arg!r} at login: its path has a line break in it")
        if not arg or any(c in _RESERVED for c in arg):
            arg = '"' + "".join("\\" + c if c in _QUOTED_ESCAPES else c for c in arg) + '"'
        parts.append(arg.replace("%", "%%"))
    return " ".join(parts).replace("\\", "\\\\")


def desktop_entry(command: Sequence[str]) -> str:
    return (
        "[Desktop Entry]\n"
        "Type=Application\n"
        "Name=Captionist\n"
        "Comment=Live captions, fully offline\n"
        f"Exec={exec_line(command)}\n"
        "Icon=captionist\n"
        "Terminal=false\n"
        "X-GNOME-Autostart-enabled=true\n"
        f"{MARKER}\n"
    )


class XdgAutostart:
    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder or autostart_dir()
        self.path = self.folder / FILE_NAME

    def location(self) -> str:
        return str(self.path)

    def state(self) -> LoginItemState:
        content = read_entry(self.path, MAX_ENTRY_BYTES)
        if isinstance(content, LoginItemState):
            return content
        try:
            text = content.decode("utf-8")
        except UnicodeDecodeError:
            return LoginItemState.FOREIGN
        lines = {line.strip() for line in text.splitlines()}
        if MARKER not in lines:
            return LoginItemState.FOREIGN
        return LoginItemState.OFF if lines.intersection(SWITCHED_OFF) else LoginItemState.ON

    def enable(self, command: Sequence[str]) -> None:
        refuse_unless_ours(self.state(), self.location())
        write_entry(self.path, desktop_entry(command).encode("utf-8"))

    def disable(self) -> None:
        remove_own_entry(self.path, self.state(), self.location())
