"""A live session whose transcript folder is on a slow disk: does the window's thread stall, are the
captions late, and does the lag figure say so?

    python bench/bench_slow_disk.py                         # every write of the file takes 0.3 s
    python bench/bench_slow_disk.py --delay 1.0 --seconds 20
    python bench/bench_slow_disk.py --folder /mnt/slowshare --delay 0   # a real slow folder

The session is the real controller, saver and transcript writer, fed 10 s of audio in real time
(0.1 s blocks, 1 s of tone then 1 s of silence) through the fake sound device into the fake engine
(tests/fakes: one token per loud 80 ms frame, 240 ms look-ahead); ``--delay`` makes each transcript
write (tokens, gap, close) wait that long first, as a disk that takes that long to ``fsync`` does.
A 10 ms timer on the window's thread measures how long it was kept from running.

Printed: the longest stall of the window's thread; the worst delay of a word (its audio time to the
moment it was shown); the highest lag figure sent; how far the file fell behind the captions; the
session's length. PASS when the thread never stalled 100 ms or more, and the lag figure reached the
worst word delay (within one 100 ms audio block, the feeding granularity): a lag figure below the
real delay would be a lie.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "app")]

from PySide6.QtCore import QCoreApplication, QTimer  # noqa: E402

from captionist.audio.devices import Source  # noqa: E402
from captionist.pipeline.controller import SessionConfig, SessionController  # noqa: E402
from captionist.qt_none_guard import guard_none_refcount  # noqa: E402
from captionist.transcript import SessionWriter  # noqa: E402
from tests.fakes.fake_engine import FakeModel  # noqa: E402
from tests.fakes.fake_sounddevice import FakeSoundDevice  # noqa: E402


def slow_writer(delay_s: float):
    """A ``writer_factory`` whose writers wait ``delay_s`` before each write, as a slow disk's fsync."""

    def factory(*args, **kwargs) -> SessionWriter:
        writer = SessionWriter(*args, **kwargs)
        for name in ("add_tokens", "write_gap", "close"):
            real = getattr(writer, name)

            def slow(*a, _real=real, **k):
                time.sleep(delay_s)
                return _real(*a, **k)

            setattr(writer, name, slow)
        return writer

    return factory


def run(folder: Path, seconds: float, delay_s: float) -> dict:
    app = QCoreApplication.instance() or QCoreApplication([])
    guard_none_refcount()
    sd = FakeSoundDevice()
    sd.add_device("Mic", rate=16000, channels=1, audio=None)
    model = FakeModel()
    ctl = SessionController(sd=sd, model_loader=lambda p, b: model, writer_factory=slow_writer(delay_s))
    start: list[float] = []
    word_delays: list[float] = []
    lags: list[int] = []
    behind: list[float] = []
    finished: list = []

    def shown(update) -> None:
        now = time.monotonic()
        word_delays.extend(now - start[0] - t.time_ms / 1000 for t in update.new_tokens)

    ctl.caption.connect(shown)
    ctl.stats.connect(lambda stats: lags.append(stats.lag_ms))
    ctl.transcript_unsaved.connect(behind.append)
    ctl.error.connect(lambda message: print("error:", message))
    ctl.session_finished.connect(lambda result: (finished.append(result), app.quit()))
    source = Source("0", "Mic", "input", "ALSA", 1, 16000, open_device=0)
    assert ctl.start(SessionConfig(Path("fake.gguf"), [source], 240, folder, "srt", token_ms=80))
    beats: list[float] = []
    heartbeat = QTimer()
    heartbeat.setInterval(10)
    heartbeat.timeout.connect(lambda: beats.append(time.monotonic()))
    heartbeat.start()
    fed = threading.Event()
    stopper = QTimer()
    stopper.setInterval(50)
    stopper.timeout.connect(lambda: fed.is_set() and ctl.state.name == "RUNNING" and ctl.stop())
    stopper.start()

    def feed() -> None:
        tone = (0.3 * np.sin(np.arange(1600) / 5)).astype(np.float32)
        silence = np.zeros(1600, np.float32)
        start.append(time.monotonic())
        n = 0
        while n < seconds * 10:
            sd.streams[-1].push(tone if (n // 10) % 2 == 0 else silence)
            n += 1
            time.sleep(max(0.0, start[0] + n * 0.1 - time.monotonic()))
        fed.set()

    threading.Thread(target=feed, daemon=True).start()
    began = time.monotonic()
    app.exec()
    stalls = np.diff(beats) if len(beats) > 1 else np.array([0.0])
    result = finished[0]
    return {
        "session_s": time.monotonic() - began,
        "stall_ms": float(stalls.max() * 1000),
        "word_delay_ms": max(word_delays) * 1000 if word_delays else 0.0,
        "lag_ms": max(lags, default=0),
        "behind_s": max(behind, default=0.0),
        "words": len(word_delays),
        "transcript": result.transcript,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--delay", type=float, default=0.3, help="seconds each write waits (default 0.3)")
    ap.add_argument("--seconds", type=float, default=10.0, help="seconds of audio (default 10)")
    ap.add_argument("--folder", type=Path, help="transcript folder (default: a new temporary one)")
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}; each write waits {args.delay} s")
    with tempfile.TemporaryDirectory() as tmp:
        r = run(args.folder or Path(tmp), args.seconds, args.delay)
        print(f"session {r['session_s']:.1f} s for {args.seconds:g} s of audio, {r['words']} words")
        print(f"transcript: {r['transcript']}")
        print(f"longest stall of the window's thread: {r['stall_ms']:.0f} ms (timer every 10 ms)")
        print(f"worst word delay (audio to screen): {r['word_delay_ms']:.0f} ms")
        print(f"highest lag figure: {r['lag_ms']} ms")
        print(f"the file was at most {r['behind_s']:.1f} s behind the captions (said from 2 s)")
        ok = r["stall_ms"] < 100 and r["lag_ms"] >= r["word_delay_ms"] - 100
        print("PASS" if ok else "FAIL")
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
