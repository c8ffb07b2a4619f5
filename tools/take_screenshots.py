"""Screenshots of the desktop app for the docs: the main window, the caption overlay over another
window, the caption page (the caption feed in headless Chromium, as an OBS browser source shows
it) over the same window, and Preferences' "Feed & alerts" tab, while the real engine captions
speech captured from a PulseAudio monitor source. The keyword "captions" is set, so its alerts show.

    python tools/take_screenshots.py                      # built-in demo model, writes docs/screenshots/
    python tools/take_screenshots.py --model voxtral.gguf --out /tmp/shots

Needs: the installed package with its engine, Xvfb (unless $DISPLAY is set), Chromium, PulseAudio,
pulseaudio-utils and espeak-ng (the private daemon of tests/e2e/pulse_server.py is used, so the
user's own audio setup is never touched). Settings and transcripts go to a temporary
CAPTIONIST_HOME. The default model is the built-in demo model (28 words), so the speech is made
of those words; with ``--model`` give ``--speech`` text that model knows.

Without a compositor (Xvfb) the X server cannot blend a translucent window, so the overlay image
is composed the way a compositor would: the other window's pixels, then the overlay's own
rendering (with its alpha) at the overlay's position on screen.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from captionist import paths  # noqa: E402
from tests.e2e.pulse_server import PulseServer  # noqa: E402

SPEECH = "hello world start captions one two three four left right up down okay next stop"
KEYWORDS = ["captions"]
ESPEAK = "-v en-us -g 20"  # a pause between words, as the demo model learnt them
SCREEN = (1440, 900)


def start_xvfb() -> subprocess.Popen[bytes]:
    """Start Xvfb on a free display and point this process at it."""
    if shutil.which("Xvfb") is None:
        sys.exit("take_screenshots: Xvfb is not installed (apt-get install xvfb), and $DISPLAY is unset")
    read_fd, write_fd = os.pipe()
    size = f"{SCREEN[0]}x{SCREEN[1]}x24"
    cmd = ["Xvfb", "-displayfd", str(write_fd), "-screen", "0", size, "-nolisten", "tcp"]
    proc = subprocess.Popen(cmd, pass_fds=(write_fd,))
    os.close(write_fd)
    with os.fdopen(read_fd) as pipe:
        display = pipe.readline().strip()
    if not display:
        proc.terminate()
        sys.exit("take_screenshots: Xvfb did not start")
    os.environ["DISPLAY"] = f":{display}"
    return proc


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(model: Path, out: Path, seconds: float, work: Path, speech: str) -> None:
    pulse = PulseServer.start(work / "pulse")
    try:
        sink = pulse.add_null_sink("speakers")
        pulse.apply_to(os.environ)  # before sounddevice (PortAudio) is imported
        os.environ["CAPTIONIST_HOME"] = str(work / "home")
        os.environ["QT_QPA_PLATFORM"] = "xcb"
        shoot(model, out, seconds, pulse, sink, speech)
    finally:
        pulse.close()


def shoot(model: Path, out: Path, seconds: float, pulse: PulseServer, sink: str, speech: str) -> None:
    from PySide6.QtCore import QEventLoop, QTimer
    from PySide6.QtGui import QFont, QImage, QPainter
    from PySide6.QtWidgets import QTextBrowser

    from captionist.ui.app import build_app
    from tools.headless_chromium import HeadlessChromium

    parts = build_app()
    app, window, overlay, settings = parts.app, parts.window, parts.overlay, parts.settings
    settings.feed.enabled, settings.feed.port = True, free_port()
    settings.alerts.keywords = list(KEYWORDS)
    parts.alerts.set_keywords(KEYWORDS)
    parts.feed.apply()
    browser = HeadlessChromium(width=1100, height=190)
    browser.start()
    browser.open(parts.feed.url)

    def pump(ms: int) -> None:
        loop = QEventLoop()
        QTimer.singleShot(ms, loop.quit)
        loop.exec()

    # "Another window": a meeting agenda the captions float over.
    other = QTextBrowser()
    other.setWindowTitle("Weekly planning - agenda")
    other.setFont(QFont("DejaVu Sans", 13))
    other.setHtml(
        "<h1>Weekly planning</h1><p><b>Thursday, 10:00</b> &middot; video call</p>"
        "<h2>Agenda</h2><ol><li>Release schedule: beta build, store review, launch date</li>"
        "<li>Open bugs: audio device switching, overlay on second screen</li>"
        "<li>Customer demo next Thursday: who presents, which build</li></ol>"
        "<h2>Notes</h2><p>Captions run offline on this laptop; the transcript is saved as the meeting "
        "goes, so nobody needs to take minutes by hand.</p>"
    )
    other.setGeometry(0, 0, *SCREEN)
    other.show()

    if model != paths.bundled_demo_model():
        window.import_model(model)
    settings.sources = [f"pulse:{sink}.monitor"]
    window.refresh_sources()
    window.move(60, 40)
    window.resize(1040, 640)
    window.show()
    overlay.resize(1100, 150)
    overlay.apply_position("bottom")
    overlay.show()
    overlay.raise_()
    pump(500)
    for _ in range(600):  # the window loads the chosen model in the background (at most 60 s)
        if window.model_info is not None or not window.error_banner.isHidden():
            break
        pump(100)
    if not window.start_session():
        sys.exit(f"take_screenshots: the session did not start: {window.error_banner.text()}")
    if not pulse.wait_for_recording(30):
        sys.exit("take_screenshots: the monitor source was never opened")
    speaker = pulse.say(speech, sink, wait=False, espeak_args=ESPEAK)
    pump(int(seconds * 1000))

    out.mkdir(parents=True, exist_ok=True)
    window.raise_()
    pump(300)
    window.grab().save(str(out / "main_window.png"))

    window.hide()
    other.raise_()
    overlay.raise_()
    pump(300)
    screen = other.grab()
    with QPainter(screen) as painter:
        painter.drawPixmap(overlay.geometry().topLeft() - other.geometry().topLeft(), overlay.grab())
    screen.save(str(out / "overlay.png"))

    page = out / "caption_page.raw.png"
    browser.screenshot(page)  # transparent around the caption box
    browser.close()
    scene = other.grab()
    with QPainter(scene) as painter:
        painter.drawImage(120, SCREEN[1] - 190 - 40, QImage(str(page)))
    scene.save(str(out / "caption_page.png"))
    page.unlink()
    prefs = window.open_preferences()
    assert prefs is not None
    prefs.tabs.setCurrentIndex(prefs.tabs.count() - 1)  # Feed & alerts
    prefs.resize(760, 640)
    pump(300)
    prefs.grab().save(str(out / "preferences_feed.png"))
    prefs.hide()

    window.controller.stop()
    window.controller.wait_idle(30000)
    speaker.kill()
    speaker.wait()
    transcript = window.last_transcript
    names = ("main_window.png", "overlay.png", "caption_page.png", "preferences_feed.png")
    print(f"take_screenshots: wrote {', '.join(str(out / n) for n in names)}")
    if transcript is not None:
        print(f"take_screenshots: session transcript {transcript}")
    app.processEvents()  # queued signals first: the end of the session restarts the level preview
    parts.at_exit()  # which this stops, before the PulseAudio daemon goes (an open stream would spin)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, default=paths.bundled_demo_model(),
                        help="GGUF model (default: the built-in demo model)")  # fmt: skip
    parser.add_argument("--speech", default=SPEECH, help="what espeak-ng says while the app listens")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots", help="output folder")
    parser.add_argument("--seconds", type=float, default=11.0, help="speech captioned before the shots")
    args = parser.parse_args()
    if not args.model.is_file():
        parser.error(f"model file not found: {args.model}")
    xvfb = start_xvfb() if not os.environ.get("DISPLAY") else None
    started = time.monotonic()
    try:
        with tempfile.TemporaryDirectory(prefix="captionist-shots-") as work:
            run(args.model, args.out.resolve(), args.seconds, Path(work), args.speech)
    finally:
        if xvfb is not None:
            xvfb.terminate()
            xvfb.wait(timeout=10)
    print(f"take_screenshots: done in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
