"""The XDG autostart entry: written where the spec says, quoted as it says, never clobbering others'."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest

from captionist.autostart import LoginItemError, LoginItemState
from captionist.autostart.xdg_autostart import FILE_NAME, XdgAutostart, autostart_dir, exec_line

COMMAND = ["/home/ann/My Apps/venv/bin/python3", "-m", "captionist"]


def exec_value(path: Path) -> str:
    return next(line[5:] for line in path.read_text().splitlines() if line.startswith("Exec="))


def test_the_folder_follows_xdg_config_home(tmp_path: Path) -> None:
    assert autostart_dir({"XDG_CONFIG_HOME": str(tmp_path / "cfg")}) == tmp_path / "cfg" / "autostart"
    assert autostart_dir({}, home=tmp_path) == tmp_path / ".config" / "autostart"
    assert autostart_dir({"XDG_CONFIG_HOME": "relative"}, home=tmp_path) == tmp_path / ".config" / "autostart"


def test_enable_writes_an_entry_with_the_command_and_disable_removes_it(tmp_path: Path) -> None:
    item = XdgAutostart(tmp_path / "autostart")  # the folder does not exist yet
    assert item.state() is LoginItemState.OFF
    item.enable(COMMAND)
    path = tmp_path / "autostart" / FILE_NAME
    assert item.state() is LoginItemState.ON and item.location() == str(path)
    text = path.read_text()
    assert text.startswith("[Desktop Entry]\n") and "Type=Application\n" in text
    assert exec_value(path) == '"/home/ann/My Apps/venv/bin/python3" -m captionist'
    assert shlex.split(exec_value(path)) == COMMAND  # what a desktop's Exec parser gets here
    item.enable(["/usr/bin/captionist"])  # enabling again replaces Captionist's own entry
    assert exec_value(path) == "/usr/bin/captionist"
    item.disable()
    assert not path.exists() and item.state() is LoginItemState.OFF
    item.disable()  # nothing there: nothing to do
    assert os.listdir(tmp_path / "autostart") == []


def test_exec_quoting_follows_the_desktop_entry_spec() -> None:
    assert exec_line(["/usr/bin/python3", "-m", "captionist"]) == "/usr/bin/python3 -m captionist"
    assert exec_line(["/opt/a b/py"]) == '"/opt/a b/py"'
    # inside quotes " ` $ \ take a backslash; then the string escape doubles every backslash
    assert exec_line(['/x/a$b"c']) == '"/x/a\\\\$b\\\\"c"'
    assert exec_line(["/x/back\\slash"]) == '"/x/back\\\\\\\\slash"'
    assert exec_line(["/x/100%"]) == "/x/100%%"  # % starts a field code
    with pytest.raises(LoginItemError, match="line break"):
        exec_line(["/x/a\nb"])


def test_a_folder_in_the_entrys_place_is_reported_and_kept(tmp_path: Path) -> None:
    (tmp_path / FILE_NAME).mkdir()
    item = XdgAutostart(tmp_path)
    assert item.state() is LoginItemState.FOREIGN
    with pytest.raises(LoginItemError, match="was not written by Captionist"):
        item.enable(COMMAND)
    with pytest.raises(LoginItemError, match="was not written by Captionist"):
        item.disable()
    assert (tmp_path / FILE_NAME).is_dir()


@pytest.mark.parametrize(
    "content",
    [b"\xff\xfe garbage", b"[Desktop Entry]\nExec=someone-else\n", b"X" * 100_000],
    ids=["not UTF-8", "another program's entry", "huge"],
)
def test_a_file_captionist_did_not_write_is_not_clobbered(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / FILE_NAME
    path.write_bytes(content)
    item = XdgAutostart(tmp_path)
    assert item.state() is LoginItemState.FOREIGN
    with pytest.raises(LoginItemError, match=str(path)):
        item.enable(COMMAND)
    with pytest.raises(LoginItemError):
        item.disable()
    assert path.read_bytes() == content


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_folder_gives_a_clear_error(tmp_path: Path) -> None:
    folder = tmp_path / "autostart"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        with pytest.raises(LoginItemError, match="could not write .*captionist.desktop"):
            XdgAutostart(folder).enable(COMMAND)
        assert os.listdir(folder) == []
    finally:
        folder.chmod(0o700)


def test_a_file_where_the_folder_goes_gives_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "autostart").write_text("in the way")
    with pytest.raises(LoginItemError, match="could not write .*captionist.desktop"):
        XdgAutostart(tmp_path / "autostart").enable(COMMAND)
    assert (tmp_path / "autostart").read_text() == "in the way"


@pytest.mark.parametrize("switch", ["Hidden=true", "X-GNOME-Autostart-enabled=false"])
def test_an_entry_the_desktop_switched_off_is_off_and_turning_on_rewrites_it(
    tmp_path: Path, switch: str
) -> None:
    item = XdgAutostart(tmp_path)
    item.enable(COMMAND)
    path = tmp_path / FILE_NAME
    path.write_text(path.read_text().replace("X-GNOME-Autostart-enabled=true", switch))
    assert item.state() is LoginItemState.OFF
    item.enable(COMMAND)
    assert item.state() is LoginItemState.ON and switch not in path.read_text()
