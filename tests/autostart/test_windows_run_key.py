"""The Windows Run-key value, against a fake registry: quoting, removal, values that are not ours."""

from __future__ import annotations

import pytest

from captionist.autostart import LoginItemError, LoginItemState
from captionist.autostart.windows_run_key import REG_SZ, VALUE_NAME, RunKeyEntry, command_line
from tests.fakes.fake_registry import FakeRunKey

COMMAND = [r"C:\Program Files\Captionist\pythonw.exe", "-m", "captionist"]
REG_DWORD = 4


def test_enable_writes_a_quoted_command_line_and_disable_removes_it() -> None:
    key = FakeRunKey()
    item = RunKeyEntry(key)
    assert item.state() is LoginItemState.OFF
    item.enable(COMMAND)
    assert key.values[VALUE_NAME] == (r'"C:\Program Files\Captionist\pythonw.exe" -m captionist', REG_SZ)
    assert item.state() is LoginItemState.ON
    assert item.location().endswith(r"\CurrentVersion\Run\Captionist")
    item.enable([r"C:\Users\ann\AppData\Local\Captionist\Captionist.exe"])
    assert key.values[VALUE_NAME][0] == r"C:\Users\ann\AppData\Local\Captionist\Captionist.exe"
    item.disable()
    assert VALUE_NAME not in key.values and item.state() is LoginItemState.OFF
    item.disable()


def test_the_command_line_uses_windows_quoting() -> None:
    assert command_line([r"C:\a b\x.exe", 'say "hi"', "plain"]) == r'"C:\a b\x.exe" "say \"hi\"" plain'


def test_a_value_of_another_type_is_not_clobbered() -> None:
    key = FakeRunKey()
    key.values[VALUE_NAME] = (1, REG_DWORD)
    item = RunKeyEntry(key)
    assert item.state() is LoginItemState.FOREIGN
    with pytest.raises(LoginItemError, match="was not written by Captionist"):
        item.enable(COMMAND)
    with pytest.raises(LoginItemError, match="was not written by Captionist"):
        item.disable()
    assert key.values[VALUE_NAME] == (1, REG_DWORD)


def test_a_registry_that_refuses_gives_a_clear_error() -> None:
    key = FakeRunKey()
    item = RunKeyEntry(key)
    item.enable(COMMAND)
    key.fail_with = PermissionError(13, "Access is denied")
    assert item.state() is LoginItemState.UNREADABLE  # left alone, never a crash
    with pytest.raises(LoginItemError, match="could not read"):
        item.disable()
    key.fail_with = None
    original_set = key.set_string

    def refuse(name: str, data: str) -> None:
        raise PermissionError(13, "Access is denied")

    key.set_string = refuse  # type: ignore[method-assign]
    with pytest.raises(LoginItemError, match="could not write .*Access is denied"):
        item.enable(COMMAND)
    key.set_string = original_set  # type: ignore[method-assign]
