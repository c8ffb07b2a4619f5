"""The real app, twice, with a GPU driver that crashes when it starts (a fake ggml Vulkan module that
raises SIGSEGV): the first run dies in it, the second starts, on the CPU, and keeps Vulkan off."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.fakes.crashing_backend import module_folder


def _run_app(home: Path, modules: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "CAPTIONIST_HOME": str(home),
           "CAPTIONIST_GGML_MODULES": str(modules)}  # fmt: skip
    return subprocess.run(
        [sys.executable, "-m", "captionist", "--quit-after", "2"], env=env, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip


def test_the_app_starts_again_after_a_gpu_driver_crashed_it(tmp_path: Path) -> None:
    modules = module_folder(tmp_path / "modules", crashing="vulkan")
    home = tmp_path / "home"
    first = _run_app(home, modules)  # the demo model loads at the first start: the driver starts
    assert first.returncode == -signal.SIGSEGV, (first.returncode, first.stderr[-2000:])
    second = _run_app(home, modules)
    assert second.returncode == 0, second.stderr[-2000:]
    assert "Traceback" not in second.stderr
    guard = home / "data" / "backend-guard"
    record = json.loads((guard / "crashed.json").read_text())
    assert [(c["backend"], c["stage"]) for c in record["crashes"]] == [("vulkan", "start_driver")]
    assert not list(guard.glob("trial-*"))
    third = _run_app(home, modules)  # and it stays off
    assert third.returncode == 0, third.stderr[-2000:]
