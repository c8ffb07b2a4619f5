"""The macOS LaunchAgent: a plist with RunAtLoad and the argv, never clobbering another agent."""

from __future__ import annotations

import plistlib
from pathlib import Path

import pytest

from captionist.autostart import LoginItemError, LoginItemState
from captionist.autostart.launch_agent import LABEL, LaunchAgent

COMMAND = ["/Applications/Caption Tools/Captionist.app/Contents/MacOS/Captionist"]


def test_enable_writes_a_run_at_load_agent_and_disable_removes_it(tmp_path: Path) -> None:
    item = LaunchAgent(tmp_path / "LaunchAgents")
    assert item.state() is LoginItemState.OFF
    item.enable(COMMAND)
    path = tmp_path / "LaunchAgents" / f"{LABEL}.plist"
    assert item.location() == str(path) and item.state() is LoginItemState.ON
    agent = plistlib.loads(path.read_bytes())
    assert agent["Label"] == LABEL and agent["RunAtLoad"] is True
    assert agent["ProgramArguments"] == COMMAND  # an argv list: a space needs no quoting
    item.disable()
    assert not path.exists() and item.state() is LoginItemState.OFF
    item.disable()


@pytest.mark.parametrize(
    "content",
    [
        b"not a plist at all",
        plistlib.dumps({"Label": "com.example.other", "RunAtLoad": True}),
        plistlib.dumps([1]),
    ],
    ids=["garbage", "another label", "not a dict"],
)
def test_a_plist_captionist_did_not_write_is_not_clobbered(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / f"{LABEL}.plist"
    path.write_bytes(content)
    item = LaunchAgent(tmp_path)
    assert item.state() is LoginItemState.FOREIGN
    with pytest.raises(LoginItemError, match="was not written by Captionist"):
        item.enable(COMMAND)
    with pytest.raises(LoginItemError, match="was not written by Captionist"):
        item.disable()
    assert path.read_bytes() == content


def test_a_folder_in_the_plists_place_is_kept(tmp_path: Path) -> None:
    (tmp_path / f"{LABEL}.plist").mkdir()
    item = LaunchAgent(tmp_path)
    assert item.state() is LoginItemState.FOREIGN
    with pytest.raises(LoginItemError):
        item.enable(COMMAND)
    assert (tmp_path / f"{LABEL}.plist").is_dir()


def test_a_file_where_the_folder_goes_gives_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "LaunchAgents").write_text("in the way")
    with pytest.raises(LoginItemError, match="could not write"):
        LaunchAgent(tmp_path / "LaunchAgents").enable(COMMAND)
    assert (tmp_path / "LaunchAgents").read_text() == "in the way"
