"""The command a login item runs: the bundle's executable when frozen, else ``python -m captionist``;
either way with ``--in-tray``, so at login the app waits in the tray."""

from __future__ import annotations

import sys
from pathlib import Path

from captionist.autostart import launch_command, login_item_for_platform
from captionist.autostart.launch_agent import LaunchAgent
from captionist.autostart.windows_run_key import RunKeyEntry
from captionist.autostart.xdg_autostart import XdgAutostart


def test_a_pip_install_runs_this_python_with_dash_m() -> None:
    assert launch_command(is_frozen=False, executable="/venv/bin/python3", platform="linux") == [
        "/venv/bin/python3",
        "-m",
        "captionist",
        "--in-tray",
    ]
    here = launch_command(is_frozen=False, platform="linux")
    assert here == [sys.executable, "-m", "captionist", "--in-tray"]


def test_the_frozen_bundle_runs_its_own_executable() -> None:
    exe = "/Applications/Captionist.app/Contents/MacOS/Captionist"
    assert launch_command(is_frozen=True, executable=exe, platform="darwin") == [exe, "--in-tray"]


def test_windows_prefers_pythonw_so_no_console_opens(tmp_path: Path) -> None:
    folder = tmp_path / "Python 3.12"
    folder.mkdir()
    (folder / "python.exe").write_bytes(b"")
    exe = str(folder / "python.exe")
    assert launch_command(is_frozen=False, executable=exe, platform="win32")[0] == exe  # no pythonw
    (folder / "pythonw.exe").write_bytes(b"")
    assert launch_command(is_frozen=False, executable=exe, platform="win32") == [
        str(folder / "pythonw.exe"),
        "-m",
        "captionist",
        "--in-tray",
    ]


def test_each_platform_gets_its_own_login_item() -> None:
    assert isinstance(login_item_for_platform("linux"), XdgAutostart)
    assert isinstance(login_item_for_platform("freebsd14"), XdgAutostart)
    assert isinstance(login_item_for_platform("darwin"), LaunchAgent)
    assert isinstance(login_item_for_platform("win32"), RunKeyEntry)
