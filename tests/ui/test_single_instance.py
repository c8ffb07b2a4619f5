"""One app per user: a second launch brings the first forward; a crashed one's socket does not block."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

import captionist
from captionist import paths
from captionist.ui.single_instance import InstanceGuard

CHILD = r"""
import sys
from PySide6.QtCore import QCoreApplication
from captionist.ui.single_instance import InstanceGuard
app = QCoreApplication([])
print("first" if InstanceGuard(sys.argv[1]).claim() else "second", flush=True)
"""


def test_a_second_guard_asks_the_first_to_come_forward(qtbot, tmp_path: Path) -> None:
    key = str(tmp_path / "instance")
    first = InstanceGuard(key)
    assert first.claim()
    with qtbot.waitSignal(first.activated, timeout=5000):
        assert not InstanceGuard(key).claim()
    first.close()
    assert InstanceGuard(key).claim()  # once the first is gone, a new launch runs


def test_a_second_process_is_refused_and_brings_the_first_forward(qtbot, tmp_path: Path) -> None:
    key = str(tmp_path / "instance")
    first = InstanceGuard(key)
    assert first.claim()
    env = {**os.environ, "PYTHONPATH": str(Path(captionist.__file__).parent.parent)}
    with qtbot.waitSignal(first.activated, timeout=20000):
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, key],
            stdout=subprocess.PIPE,
            text=True,
            env={**env, "QT_QPA_PLATFORM": "offscreen"},
        )
    out, _ = child.communicate(timeout=20)
    assert (child.returncode, out.strip()) == (0, "second")
    first.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a stale socket file is a Unix thing")
def test_a_socket_left_by_a_crashed_instance_does_not_block_starting(qtbot, tmp_path: Path) -> None:
    key = tmp_path / "instance"
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(key))  # bound and never listened on, then gone: what a killed instance leaves
    dead.close()
    assert key.exists()
    guard = InstanceGuard(str(key))
    assert guard.claim()
    with qtbot.waitSignal(guard.activated, timeout=5000):
        assert not InstanceGuard(str(key)).claim()
    guard.close()


def test_the_key_is_per_user_and_settings_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    a = paths.instance_name()
    monkeypatch.setenv(paths.HOME_ENV, str(tmp_path / "elsewhere"))
    assert paths.instance_name() != a
    monkeypatch.setenv("USER", "someone-else")
    monkeypatch.setenv("LOGNAME", "someone-else")
    b = paths.instance_name()
    monkeypatch.setenv("USER", "a-third-person")
    monkeypatch.setenv("LOGNAME", "a-third-person")
    assert paths.instance_name() != b
    assert paths.instance_name().startswith("captionist-") and "/" not in paths.instance_name()


def test_a_second_launch_of_the_app_opens_nothing(qtbot, monkeypatch: pytest.MonkeyPatch) -> None:
    from captionist.ui import app as app_module

    first = InstanceGuard()  # the running app, on this user's key
    assert first.claim()
    monkeypatch.setattr(app_module, "build_app", lambda **_: pytest.fail("a second app was built"))
    with qtbot.waitSignal(first.activated, timeout=5000):
        assert app_module.run_gui() == 0
    first.close()
