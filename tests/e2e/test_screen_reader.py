"""The desktop app as a screen reader finds it: the real ``captionist`` on an X display, read over
AT-SPI (the accessibility bus Orca reads on Linux) by ``screen_reader_listener.py``.

A problem shown at start (here a corrupt settings file) is read out at once, and every control the
keyboard reaches has a name: its own, or a label that names it. tests/ui/test_accessibility.py checks
the same names through Qt for every window; this checks that they reach a screen reader.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import unavailable
from tests.fakes.fake_portal import PrivateBus
from tests.ui.x11_desktop import X11Desktop, X11Unavailable

pytestmark = pytest.mark.e2e

LISTENER = Path(__file__).with_name("screen_reader_listener.py")
BUS_LAUNCHERS = ("/usr/libexec/at-spi-bus-launcher", "/usr/lib/at-spi2-core/at-spi-bus-launcher")
ASSERTIVE = 2  # AT-SPI's politeness of an announcement read at once
CORRUPT = "settings file was corrupt"


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


@pytest.fixture
def desktop():
    try:
        desktop = X11Desktop.start()
    except X11Unavailable as exc:
        unavailable(f"the screen reader test needs an X display: {exc}")
    try:
        yield desktop
    finally:
        desktop.close()


def test_a_screen_reader_hears_the_problem_and_finds_every_control_named(desktop, tmp_path: Path) -> None:
    launcher = next((p for p in BUS_LAUNCHERS if Path(p).exists()), None)
    python = _python_with_atspi()
    if launcher is None or python is None or not PrivateBus.available():
        unavailable("the screen reader test needs at-spi2-core, python3-gi, gir1.2-atspi-2.0 and dbus-daemon")
    home = tmp_path / "home"
    (home / "config").mkdir(parents=True)
    (home / "config" / "settings.json").write_text("{not json")
    out = tmp_path / "tree.json"
    with PrivateBus() as bus:
        env = {**desktop.env(), "DBUS_SESSION_BUS_ADDRESS": bus.address, "CAPTIONIST_HOME": str(home)}
        env.pop("QT_QPA_PLATFORM", None)  # the X display, not offscreen
        env.pop("QT_LINUX_ACCESSIBILITY_ALWAYS_ON", None)  # on because a screen reader says it runs
        env["QT_QPA_PLATFORM"] = "xcb"
        a11y_bus = subprocess.Popen([launcher, "--launch-immediately"], env=env, stderr=subprocess.DEVNULL)
        listener = subprocess.Popen(
            [python, str(LISTENER), "--app", "Captionist", "--button", "Start", "--announcement", CORRUPT]
            + ["--timeout", "90", "--out", str(out)],
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        app = None
        try:
            assert listener.stdout is not None and listener.stdout.readline().strip() == "ready"
            app = subprocess.Popen(
                [sys.executable, "-m", "captionist", "--quit-after", "120"],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            assert listener.wait(timeout=120) == 0
        finally:
            for process in (app, listener, a11y_bus):
                if process is not None and process.poll() is None:
                    process.terminate()
                    process.wait(timeout=30)
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
