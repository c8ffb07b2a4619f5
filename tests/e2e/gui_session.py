"""Drive the real desktop app for the end-to-end test: one captioning session from a PulseAudio source.

Run as a separate process (PortAudio must see the private PulseAudio server from the start)::

    python -m tests.e2e.gui_session --source pulse:sink.monitor --seconds 12 --out result.json

It builds the app exactly as ``captionist`` does (``build_app``: settings from ``CAPTIONIST_HOME``,
the model picker's default, which is the bundled demo model when none is configured; cyclic garbage
collected on the GUI thread only, as ``run_gui`` has it), ticks the
source, presses Start, keeps the Qt event loop running for ``--seconds`` while recording every
text the caption overlay shows, presses Stop, waits for the session to finish and writes JSON:
``{"started", "model", "overlay_texts", "overlay_final", "transcript", "transcript_text"}``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from PySide6.QtCore import QEventLoop, QTimer


def pump(ms: int) -> None:
    loop = QEventLoop()
    QTimer.singleShot(ms, loop.quit)
    loop.exec()


_T0 = time.monotonic()


def step(what: str) -> None:
    """A line on stderr with the seconds since start: a failed test shows where the time went."""
    print(f"gui_session {time.monotonic() - _T0:6.1f} s: {what}", file=sys.stderr, flush=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    ap.add_argument("--seconds", type=float, required=True)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()

    from PySide6.QtWidgets import QApplication

    from captionist.main_thread_gc import MainThreadCollector
    from captionist.ui.app import build_app

    collector = MainThreadCollector(QApplication.instance() or QApplication(sys.argv[:1]))
    step("Qt imported")
    parts = build_app()
    step(f"app built; error banner {parts.window.error_banner.text()!r}")
    window, overlay = parts.window, parts.overlay
    parts.settings.sources = [args.source]
    window.show()
    overlay.show()
    # The source is found as the app finds it (PortAudio's "pulse" device, then pactl); a sound
    # server that answers late leaves it out of one listing, so the list is read again as the
    # app's own refresh would, for up to 30 s.
    tries = 0
    while tries < 60:
        tries += 1
        window.refresh_sources()
        if any(src.id == args.source for src in window.sources.selected()):
            break
        pump(500)
    step(f"source {'ticked' if window.sources.selected() else 'not found'} after {tries} listing(s)")
    preview = window.meters.preview
    step(f"window shown; level preview {'open' if preview is not None and preview.active else 'closed'}")
    seen: list[str] = []

    def record() -> None:
        text = " ".join(overlay.visible_lines()).strip()
        if text and (not seen or seen[-1] != text):
            seen.append(text)

    poll = QTimer()
    poll.setInterval(100)
    poll.timeout.connect(record)
    poll.start()
    for _ in range(600):  # the window loads the chosen model in the background (at most 60 s)
        if window.model_info is not None or not window.error_banner.isHidden():
            break
        pump(100)
    loaded = "loaded" if window.model_info is not None else "not loaded"
    step(f"model {loaded}; error banner {window.error_banner.text()!r}")
    started = window.start_session()
    step(f"session {'started' if started else 'not started'}")
    result: dict = {"started": started, "model": str(window.selected_model()), "error": "",
                    "sources": [src.id for src in window.sources.selected()]}  # fmt: skip
    writing = None
    if started:
        pump(int(args.seconds * 1000))
        record()
        writing = window.controller.transcript_path  # the file the session writes as it goes
        window.controller.stop()
        window.controller.wait_idle(60000)
        pump(500)  # let the session's "finished" reach the window
        record()
    else:
        result["error"] = window.error_banner.text()
    poll.stop()
    transcript = window.last_transcript or writing
    result["overlay_texts"] = seen
    result["overlay_final"] = overlay.visible_lines()
    result["transcript"] = str(transcript) if transcript else None
    written = transcript is not None and transcript.is_file()  # not: the session captioned nothing
    result["transcript_text"] = transcript.read_text(encoding="utf-8") if written else ""
    args.out.write_text(json.dumps(result, indent=1))
    parts.at_exit()
    collector.stop()
    parts.app.processEvents()
    return 0 if started else 1


if __name__ == "__main__":
    sys.exit(main())
