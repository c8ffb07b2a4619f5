"""Start Captionist when the user logs in: one interface, one implementation per platform.

Usage::

    from captionist.autostart import LoginItemError, LoginItemState, login_item_for_platform
    item = login_item_for_platform()        # XdgAutostart, LaunchAgent or RunKeyEntry for this OS
    item.state()                            # LoginItemState.ON / OFF / FOREIGN (what is on disk now)
    item.enable(launch_command())           # raises LoginItemError with a message for the user
    item.disable()

The real state is what exists on disk (or in the registry), never the setting: ``Settings`` records
the user's choice, Preferences shows ``state()``. An entry Captionist did not write (garbage, a
folder in its place, another program's file) is ``FOREIGN``: ``enable`` and ``disable`` refuse to
touch it and say where it is. GUI thread; each call does a little file or registry I/O.
"""

from __future__ import annotations

import sys

from captionist.autostart.command import launch_command
from captionist.autostart.login_item import LoginItem, LoginItemError, LoginItemState


def login_item_for_platform(platform: str = sys.platform) -> LoginItem:
    """The login item of ``platform`` (``sys.platform``): Windows, macOS, else XDG (Linux, the BSDs)."""
    if platform == "win32":
        from captionist.autostart.windows_run_key import RunKeyEntry, WinregRunKey

        return RunKeyEntry(WinregRunKey())
    if platform == "darwin":
        from captionist.autostart.launch_agent import LaunchAgent

        return LaunchAgent()
    from captionist.autostart.xdg_autostart import XdgAutostart

    return XdgAutostart()


__all__ = ["LoginItem", "LoginItemError", "LoginItemState", "launch_command", "login_item_for_platform"]
