"""The real app on an X desktop (Xvfb, openbox) with a PulseAudio source: its level meters record
from the source while the window is on screen, and nothing records while it is minimized, the
way PulseAudio itself counts recording streams (what the desktop's microphone indicator shows)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from captionist.settings import Settings, save_settings
from tests.e2e.conftest import SINK
from tests.e2e.pulse_server import PulseServer
from tests.ui.x11_desktop import X11Desktop

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parent.parent.parent
WAIT_S = 30.0  # bounds a broken run; each change shows in well under a second


def until(check: Callable[[], bool]) -> bool:
    end = time.monotonic() + WAIT_S
    while time.monotonic() < end:
        if check():
            return True
        time.sleep(0.1)
    return check()


def test_the_microphone_is_open_only_while_the_window_is_on_screen(
    desktop: X11Desktop, pulse: PulseServer, tmp_path: Path
) -> None:
    settings = Settings()
    settings.sources = [f"pulse:{SINK}.monitor"]
    settings.first_run_done = True
    save_settings(settings)  # into this test's CAPTIONIST_HOME, which the app gets too
    env = dict(pulse.env(), DISPLAY=desktop.display, CAPTIONIST_HOME=os.environ["CAPTIONIST_HOME"])
    env.pop("QT_QPA_PLATFORM", None)
    app = subprocess.Popen(
        [sys.executable, "-m", "captionist", "--quit-after", "120"],
        env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        found = subprocess.run(
            ["xdotool", "search", "--sync", "--onlyvisible", "--name", "^Captionist$"],
            env=desktop.env(), capture_output=True, text=True, timeout=WAIT_S,
        )  # fmt: skip
        window = found.stdout.split()[0]

        def xdotool(*args: str) -> None:
            subprocess.run(["xdotool", *args, window], env=desktop.env(), check=True, timeout=WAIT_S)

        assert until(lambda: pulse.recording_streams() == 1), "the meters do not record while shown"
        xdotool("windowminimize", "--sync")
        assert until(lambda: pulse.recording_streams() == 0), "still recording while minimized"
        xdotool("windowactivate", "--sync")
        assert until(lambda: pulse.recording_streams() == 1), "the meters did not come back"
    finally:
        app.terminate()
        app.wait(timeout=30)
