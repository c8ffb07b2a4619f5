"""captionist.backend_guard: a process that dies inside a trial turns that backend off, and nothing
else does (a trial that ends, one that raises, one still running in another process)."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from captionist.backend_guard import RECORD, BackendCrash, BackendGuard, BackendStage


def _python(code: str, folder: Path, **kw: object) -> subprocess.Popen[str]:
    """A separate process running ``code`` with ``guard`` (a BackendGuard on ``folder``) at hand."""
    prelude = (
        "import os, sys; from pathlib import Path; "
        "from captionist.backend_guard import BackendGuard, BackendStage; "
        f"guard = BackendGuard(Path({str(folder)!r}))\n"
    )
    return subprocess.Popen([sys.executable, "-c", prelude + code], text=True, **kw)  # type: ignore[call-overload]


def _trials(folder: Path) -> list[Path]:
    return sorted(folder.glob("trial-*.json"))


def test_a_process_that_dies_in_a_trial_turns_the_backend_off(tmp_path: Path) -> None:
    p = _python("with guard.trial('vulkan', BackendStage.START_DRIVER):\n    os._exit(3)", tmp_path)
    assert p.wait(timeout=60) == 3
    assert len(_trials(tmp_path)) == 1  # left behind, no longer locked
    guard = BackendGuard(tmp_path)
    found = guard.collect()
    assert [(c.backend, c.stage) for c in found] == [("vulkan", BackendStage.START_DRIVER)]
    assert abs((datetime.now() - found[0].when).total_seconds()) < 120
    assert set(guard.disabled()) == {"vulkan"}
    assert _trials(tmp_path) == []
    assert guard.collect() == []  # told once
    assert set(BackendGuard(tmp_path).disabled()) == {"vulkan"}  # and kept
    assert guard.policy().skip == frozenset({"vulkan"})


def test_a_trial_that_returns_or_raises_is_no_crash(tmp_path: Path) -> None:
    guard = BackendGuard(tmp_path)
    with guard.trial("cuda", BackendStage.OPEN_MODEL):
        [trial] = _trials(tmp_path)
        assert json.loads(trial.read_text())["stage"] == "open_model"
        assert guard.collect() == []  # our own trial is alive: left alone
        assert trial.exists()
    with pytest.raises(ValueError), guard.trial("cuda", BackendStage.OPEN_MODEL):
        raise ValueError("a model file the engine refused")
    assert _trials(tmp_path) == []
    assert guard.collect() == [] and guard.disabled() == {}


def test_a_trial_running_in_another_process_is_left_alone(tmp_path: Path) -> None:
    code = "with guard.trial('vulkan', BackendStage.OPEN_MODEL):\n    print('in', flush=True)\n    input()"
    p = _python(code, tmp_path, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert p.stdout is not None and p.stdout.readline().strip() == "in"
        guard = BackendGuard(tmp_path)
        assert guard.collect() == []
        assert len(_trials(tmp_path)) == 1
    finally:
        assert p.stdin is not None
        p.stdin.write("\n")
        p.stdin.close()
        assert p.wait(timeout=60) == 0
    assert _trials(tmp_path) == [] and guard.collect() == [] and guard.disabled() == {}


def test_policy_starts_each_driver_in_a_trial(tmp_path: Path) -> None:
    guard = BackendGuard(tmp_path)
    policy = guard.policy()
    assert policy.skip == frozenset() and policy.trial is not None
    with policy.trial("vulkan"):
        [trial] = _trials(tmp_path)
        assert json.loads(trial.read_text())["stage"] == "start_driver"
    assert _trials(tmp_path) == []


def test_enable_turns_a_backend_back_on(tmp_path: Path) -> None:
    guard = BackendGuard(tmp_path)
    for name in ("vulkan", "cuda"):
        (tmp_path / f"trial-1-{name}.json").write_text(
            json.dumps({"backend": name, "stage": "start_driver", "when": "2026-12-06T05:30:00"})
        )
    assert {c.backend for c in guard.collect()} == {"vulkan", "cuda"}
    guard.enable("vulkan")
    assert set(guard.disabled()) == {"cuda"}
    guard.enable("metal")  # was never off
    assert set(guard.disabled()) == {"cuda"}


@pytest.mark.parametrize(
    "content",
    [b"", b'{"done": true}', b"\xff\xfe not json", b"[1, 2]", json.dumps({"backend": "../../x", "stage":
     "start_driver", "when": "2026-12-06T05:30:00"}).encode(), json.dumps({"backend": "vulkan", "stage":
     "rebooting", "when": "2026-12-06T05:30:00"}).encode(), b"{" + b" " * (1 << 20) + b"}"],
)  # fmt: skip
def test_what_is_not_a_crash_left_by_a_trial_is_cleared(tmp_path: Path, content: bytes) -> None:
    """Empty (the process died before writing), done (it died after the step), or not ours."""
    (tmp_path / "trial-7-0.json").write_bytes(content)
    guard = BackendGuard(tmp_path)
    assert guard.collect() == [] and guard.disabled() == {}
    assert _trials(tmp_path) == []


@pytest.mark.parametrize(
    "record",
    [b"{not json", b"\x00" * 10, b'{"crashes": "vulkan"}', b'{"crashes": [{"backend": "VULKAN", "stage": '
     b'"start_driver", "when": "2026-12-06T05:30:00"}, {"backend": "cuda", "stage": "open_model", '
     b'"when": 5}]}',
     b'{"crashes": [' + b'{"backend": "vulkan"},' * 10000 + b"{}]}"],
)  # fmt: skip
def test_a_corrupt_or_hostile_record_turns_nothing_off(tmp_path: Path, record: bytes) -> None:
    (tmp_path / RECORD).write_bytes(record)
    guard = BackendGuard(tmp_path)
    assert guard.disabled() == {}
    assert guard.policy().skip == frozenset()
    guard.enable("vulkan")  # nothing to do, never raises


def test_a_record_with_a_bad_entry_keeps_the_good_ones(tmp_path: Path) -> None:
    good = BackendCrash("cuda", BackendStage.OPEN_MODEL, datetime(2026, 12, 6, 5, 30))
    (tmp_path / RECORD).write_text(json.dumps({"crashes": [{"backend": "x y"}, good.to_json()]}))
    assert BackendGuard(tmp_path).disabled() == {"cuda": good}


def test_a_folder_that_cannot_be_written_runs_the_step_unguarded(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("a file where the folder should be")
    guard = BackendGuard(blocked)
    ran = []
    with guard.trial("vulkan", BackendStage.START_DRIVER):
        ran.append(True)
    assert ran == [True]
    assert guard.collect() == [] and guard.disabled() == {}


def test_the_message_names_the_backend_and_the_way_back(tmp_path: Path) -> None:
    crash = BackendCrash("vulkan", BackendStage.START_DRIVER, datetime(2026, 12, 6, 5, 30))
    message = crash.message()
    assert "starting the graphics driver for Vulkan" in message
    assert "Preferences → General" in message and "CPU" in message
    assert "loading a model on CUDA" in BackendCrash("cuda", BackendStage.OPEN_MODEL, crash.when).message()
