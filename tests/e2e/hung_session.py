"""Drive the real desktop app through a sound server that hangs during a session (the end-to-end
test ``test_stuck_sound_server``): the test hangs and continues the server, this process presses
the buttons. Steps, each after a line on stdin from the test::

    python -m tests.e2e.hung_session --source pulse:sink.monitor --out result.json
    -> "recording"   the session captures; the test speaks, then hangs the server and says "hung"
    wait for the window to say the source stopped sending; Stop, wait for the session to finish;
    Start again (the server is still hung)
    -> "tried"       the test lets the server answer and says "answered"
    wait until the last call to the server has returned and the window has reopened its level meters;
    Start, Stop; write the JSON result

Result: ``{"banner_stalled", "stop_s", "finished", "transcript_text", "start_while_hung", "banner_while_hung",
"banner_when_answered", "meters_when_answered", "start_after", "banner_after"}``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from tests.e2e.gui_session import pump


def tell(line: str) -> None:
    print(line, flush=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()

    from PySide6.QtWidgets import QApplication

    from captionist.audio.bounded_call import stuck_for
    from captionist.main_thread_gc import MainThreadCollector
    from captionist.ui.app import build_app

    collector = MainThreadCollector(QApplication.instance() or QApplication(sys.argv[:1]))
    parts = build_app()
    window = parts.window
    parts.settings.sources = [args.source]
    window.show()
    for _ in range(60):
        window.refresh_sources()
        if window.sources.selected():
            break
        pump(500)
    for _ in range(600):
        if window.model_info is not None:
            break
        pump(100)
    result: dict = {"started": window.start_session()}
    tell("recording")
    sys.stdin.readline()  # "hung": the test spoke, then stopped the server
    for _ in range(100):  # the source stops sending: the window says so
        if "stopped sending audio" in window.error_banner.text():
            break
        pump(100)
    result["banner_stalled"] = window.error_banner.text()
    writing = window.controller.transcript_path
    began = time.monotonic()
    window.controller.stop()  # the window's Stop
    result["stop_s"] = round(time.monotonic() - began, 2)
    result["finished"] = window.controller.wait_idle(60000)
    pump(500)
    transcript = window.last_transcript or writing
    result["transcript_text"] = (
        transcript.read_text(encoding="utf-8") if transcript and transcript.is_file() else ""
    )
    result["start_while_hung"] = window.start_session()
    result["banner_while_hung"] = window.error_banner.text()
    tell("tried")
    sys.stdin.readline()  # "answered"
    for _ in range(300):
        if stuck_for() is None:
            break
        pump(100)
    for _ in range(50):  # the window hears that the server answers and tries it again by itself
        if window.meters.preview.active and "not answering" not in window.error_banner.text():
            break
        pump(100)
    result["banner_when_answered"] = window.error_banner.text()
    result["meters_when_answered"] = window.meters.preview.active
    result["start_after"] = window.start_session()
    result["banner_after"] = window.error_banner.text()
    pump(1000)
    window.controller.stop()
    window.controller.wait_idle(60000)
    args.out.write_text(json.dumps(result, indent=1))
    parts.at_exit()
    collector.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
