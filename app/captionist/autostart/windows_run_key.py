"""Windows: a ``Captionist`` value under ``HKCU\\Software\\Microsoft\\Windows\\CurrentVersion\\Run``.

Windows runs each string value of that key at login as a command line. The registry is reached
through ``RunKey`` (``WinregRunKey`` over ``winreg``; tests give a fake), so this file's logic runs
anywhere. A value of another type (not a string) under Captionist's name is left alone.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from typing import Any, Protocol

from captionist.autostart.login_item import LoginItemError, LoginItemState, refuse_unless_ours

RUN_KEY = r"Software\Microsoft\Windows\CurrentVersion\Run"
VALUE_NAME = "Captionist"
REG_SZ = 1  # winreg.REG_SZ
REG_EXPAND_SZ = 2  # winreg.REG_EXPAND_SZ


class RunKey(Protocol):
    """The Run key of the current user; each method raises OSError as winreg does."""

    def get(self, name: str) -> tuple[Any, int] | None:
        """(data, registry type) of value ``name``, None when there is none."""
        ...

    def set_string(self, name: str, data: str) -> None: ...

    def delete(self, name: str) -> None: ...


class WinregRunKey:
    """``RunKey`` over the real registry (Windows only)."""

    def get(self, name: str) -> tuple[Any, int] | None:
        import winreg  # type: ignore[import-not-found]

        try:
            with winreg.OpenKey(winreg.HKEY_CURRENT_USER, RUN_KEY) as key:
                data, kind = winreg.QueryValueEx(key, name)
        except FileNotFoundError:
            return None
        return data, int(kind)

    def set_string(self, name: str, data: str) -> None:
        import winreg  # type: ignore[import-not-found]

        with winreg.CreateKey(winreg.HKEY_CURRENT_USER, RUN_KEY) as key:
            winreg.SetValueEx(key, name, 0, winreg.REG_SZ, data)

    def delete(self, name: str) -> None:
        import winreg  # type: ignore[import-not-found]

        with winreg.OpenKey(winreg.HKEY_CURRENT_USER, RUN_KEY, 0, winreg.KEY_SET_VALUE) as key:
            winreg.DeleteValue(key, name)


def command_line(command: Sequence[str]) -> str:
    """``command`` as one Windows command line (MS C runtime quoting: paths with spaces are quoted)."""
    return subprocess.list2cmdline(list(command))


class RunKeyEntry:
    def __init__(self, key: RunKey) -> None:
        self.key = key

    def location(self) -> str:
        return f"HKEY_CURRENT_USER\\{RUN_KEY}\\{VALUE_NAME}"

    def state(self) -> LoginItemState:
        try:
            found = self.key.get(VALUE_NAME)
        except OSError:
            return LoginItemState.UNREADABLE
        if found is None:
            return LoginItemState.OFF
        data, kind = found
        ours = kind in (REG_SZ, REG_EXPAND_SZ) and isinstance(data, str) and data.strip() != ""
        return LoginItemState.ON if ours else LoginItemState.FOREIGN

    def enable(self, command: Sequence[str]) -> None:
        refuse_unless_ours(self.state(), self.location())
        try:
            self.key.set_string(VALUE_NAME, command_line(command))
        except OSError as exc:
            raise LoginItemError(f"could not write {self.location()}: {exc.strerror or exc}") from exc

    def disable(self) -> None:
        state = self.state()
        if state is LoginItemState.OFF:
            return
        refuse_unless_ours(state, self.location())
        try:
            self.key.delete(VALUE_NAME)
        except FileNotFoundError:
            return
        except OSError as exc:
            raise LoginItemError(f"could not remove {self.location()}: {exc.strerror or exc}") from exc
