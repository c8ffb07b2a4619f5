"""The desktop app as a screen reader finds it: the real app on an X display, read over AT-SPI (the
accessibility bus Orca reads on Linux) by ``screen_reader_listener.py``.

- A problem shown at start (here a corrupt settings file) is read out at once, and every control the
  keyboard reaches has a name: its own, or a label that names it (tests/ui/test_accessibility.py
  checks the same names through Qt for every window; this checks that they reach a screen reader).
- With "Send the captions to the screen reader" on, a live session (espeak-ng speaking into a
  PulseAudio null sink, the built-in demo model) reaches the screen reader word for word as the
  transcript file has it.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import SINK, unavailable
from tests.e2e.pulse_server import PulseServer
from tests.e2e.test_live_capture import CAPTURE_S, speak_to
from tests.fakes.fake_portal import PrivateBus

pytestmark = pytest.mark.e2e

LISTENER = Path(__file__).with_name("screen_reader_listener.py")
ROOT = Path(__file__).resolve().parent.parent.parent
BUS_LAUNCHERS = ("/usr/libexec/at-spi-bus-launcher", "/usr/lib/at-spi2-core/at-spi-bus-launcher")
POLITE, ASSERTIVE = 1, 2  # AT-SPI's politeness of an announcement: after the speech, at once
CORRUPT = "settings file was corrupt"
LAG_NEWS = ("Captions are falling behind.", "Captions caught up.")  # ui/lag_indicator.py, under load
TIMES = re.compile(r"\[\d\d:\d\d:\d\d\.\d{3} --> \d\d:\d\d:\d\d\.\d{3}\]")  # a TXT transcript's


def _python_with_atspi() -> str | None:
    """An interpreter that has PyGObject and AT-SPI (the system one, where the tests run elsewhere)."""
    check = "import gi; gi.require_version('Atspi', '2.0'); from gi.repository import Atspi"
    for python in dict.fromkeys((sys.executable, "/usr/bin/python3")):
        if (
            Path(python).exists()
            and subprocess.run([python, "-c", check], capture_output=True).returncode == 0
        ):
            return python
    return None


@dataclass
class Listening:
    env: dict[str, str]  # the environment the app must run in
    wait: Callable[[], None]  # until the listener has written its file


@contextmanager
def screen_reader(base_env: Mapping[str, str], home: Path, out: Path, *listen: str) -> Iterator[Listening]:
    """A private session bus with the accessibility bus on it and the listener started (``listen``
    are its arguments), waiting for the app. The listener has written ``out`` when the block ends
    without an error."""
    launcher = next((p for p in BUS_LAUNCHERS if Path(p).exists()), None)
    python = _python_with_atspi()
    if launcher is None or python is None or not PrivateBus.available():
        unavailable("the screen reader test needs at-spi2-core, python3-gi, gir1.2-atspi-2.0 and dbus-daemon")
    with PrivateBus() as bus:
        env = {**base_env, "DBUS_SESSION_BUS_ADDRESS": bus.address, "CAPTIONIST_HOME": str(home)}
        env.pop("QT_LINUX_ACCESSIBILITY_ALWAYS_ON", None)  # on because a screen reader says it runs
        env["QT_QPA_PLATFORM"] = "xcb"  # the X display, not offscreen
        a11y_bus = subprocess.Popen([launcher, "--launch-immediately"], env=env, stderr=subprocess.DEVNULL)
        listener = subprocess.Popen(
            [python, str(LISTENER), "--app", "Captionist", "--out", str(out), *listen],
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )

        def wait() -> None:
            assert listener.wait(timeout=180) == 0

        try:
            assert listener.stdout is not None and listener.stdout.readline().strip() == "ready"
            yield Listening(env, wait)
            wait()
        finally:
            for process in (listener, a11y_bus):
                if process.poll() is None:
                    process.terminate()
                    process.wait(timeout=30)


def _run(cmd: list[str], env: Mapping[str, str], until: Callable[[subprocess.Popen[Any]], object]) -> None:
    app = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        until(app)
    finally:
        if app.poll() is None:
            app.terminate()
            app.wait(timeout=30)


def test_a_screen_reader_hears_the_problem_and_finds_every_control_named(desktop, tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "config").mkdir(parents=True)
    (home / "config" / "settings.json").write_text("{not json")
    out = tmp_path / "tree.json"
    listen = ("--button", "Start", "--announcement", CORRUPT, "--timeout", "90")
    cmd = [sys.executable, "-m", "captionist", "--quit-after", "120"]
    with screen_reader(desktop.env(), home, out, *listen) as listening:
        # the listener returns once it has heard the problem and seen the window: then the app quits
        _run(cmd, listening.env, until=lambda app: listening.wait())
    result = json.loads(out.read_text())
    assert result["found"], "the app did not appear on the accessibility bus"
    read = [a for a in result["announcements"] if CORRUPT in a["text"]]
    assert read and read[0]["politeness"] == ASSERTIVE, result["announcements"]

    nodes = [n for n in result["nodes"] if n["showing"]]
    named = {(n["role"], n["name"]) for n in nodes}
    labelled = {(n["role"], label) for n in nodes for label in n["labelled_by"]}
    for role, name in [
        ("push button", "Start"),
        ("slider", "Latency"),
        ("text", "Transcript"),
        ("text", "Search the transcript"),
        ("push button", "Dismiss the problems"),
    ]:
        assert (role, name) in named, (role, name)
    assert ("combo box", "Model") in labelled
    assert ("list", "Audio sources") in named | labelled
    unnamed = [
        n
        for n in nodes
        if n["focusable"] and not n["name"].strip() and not n["labelled_by"] and n["role"] != "combo box"
    ]
    assert unnamed == [], unnamed
    unlabelled_combos = [
        n for n in nodes if n["role"] == "combo box" and n["focusable"] and not n["labelled_by"]
    ]
    assert unlabelled_combos == [], unlabelled_combos


def test_a_live_session_reaches_the_screen_reader_word_for_word(
    desktop, pulse: PulseServer, model: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    (home / "config").mkdir(parents=True)
    settings: dict[str, Any] = {"screen_reader_captions": True}
    if model.name != "demo.gguf":  # CAPTIONIST_E2E_MODEL
        settings.update(model_path=str(model), backend="cpu")
    (home / "config" / "settings.json").write_text(json.dumps(settings))
    out, session = tmp_path / "said.json", tmp_path / "session.json"
    cmd = [sys.executable, "-m", "tests.e2e.gui_session", "--source", f"pulse:{SINK}.monitor",
           "--seconds", f"{CAPTURE_S:g}", "--out", str(session)]  # fmt: skip
    recorded: list[bool] = []
    with screen_reader(pulse.env(desktop.env()), home, out, "--until-gone", "--timeout", "150") as listening:
        _run(cmd, listening.env, until=lambda app: recorded.append(speak_to(app, pulse, timeout_s=120)[0]))
    assert recorded == [True], "the app never opened the monitor source"
    transcript = TIMES.sub(" ", json.loads(session.read_text())["transcript_text"]).split()
    said = json.loads(out.read_text())["announcements"]
    captions = [a for a in said if not a["text"].startswith(LAG_NEWS)]
    assert transcript, "nothing was transcribed"
    assert all(a["politeness"] == POLITE for a in captions), said
    assert " ".join(a["text"] for a in captions).split() == transcript, said
