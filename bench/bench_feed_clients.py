"""Does serving the caption feed to many readers slow the inference worker?

    python bench/bench_feed_clients.py [--model demo.gguf] [--clients 50] [--seconds 40]

A live session as the app runs it (SessionController, capture, worker, engine, the CaptionFeed on
the GUI thread with its server thread) on the held-out demo clips (tests/data/demo) pushed in 20 ms
blocks at real-time pace, twice: with the feed served and nobody reading, then with ``--clients``
readers (bench/feed_clients.py, another process, half SSE, half WebSocket, all from the start). The
worker's time per update (the engine's ``feed`` call, as the worker makes it) is compared between the
two runs; the GUI thread's time per update in the feed (hub + captions file) is printed too, and
every reader must get every committed token exactly once, in order.

To measure the app's cost rather than the readers' own: the app's process is pinned to CPU 0 with
one engine thread, the readers to CPU 1 (so the server thread shares the worker's CPU, as on a busy
laptop). Prints the load average; run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import glob
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import soundfile

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from PySide6.QtCore import QCoreApplication, QTimer  # noqa: E402

from captionist import engine, paths  # noqa: E402
from captionist.audio.devices import Source  # noqa: E402
from captionist.feed.access import BindAddress  # noqa: E402
from captionist.feed.caption_feed import CaptionFeed  # noqa: E402
from captionist.pipeline.controller import SessionConfig, SessionController  # noqa: E402
from captionist.settings import Settings  # noqa: E402
from tests.fakes.fake_sounddevice import FakeSoundDevice  # noqa: E402

BLOCK = 320  # 20 ms at 16 kHz, the app's capture block


class TimedModel:
    """The model, with each stream's ``feed`` timed (the worker's time per update)."""

    def __init__(self, model: engine.Model) -> None:
        self._model, self.feed_s = model, []

    def __getattr__(self, name: str):  # noqa: ANN204 - a transparent proxy
        return getattr(self._model, name)

    def stream(self, *args, **kwargs):  # noqa: ANN002, ANN003, ANN201
        stream, times = self._model.stream(*args, **kwargs), self.feed_s

        class Timed:
            def __getattr__(self, name: str):  # noqa: ANN204
                return getattr(stream, name)

            def feed(self, pcm: np.ndarray):  # noqa: ANN201
                t0 = time.perf_counter()
                out = stream.feed(pcm)
                times.append(time.perf_counter() - t0)
                return out

        return Timed()


def speech(seconds: float) -> np.ndarray:
    clips = [
        soundfile.read(f, dtype="float32")[0] for f in sorted(glob.glob(str(ROOT / "tests/data/demo/*.wav")))
    ]
    pcm = np.concatenate(clips)
    while pcm.size < seconds * 16000:
        pcm = np.concatenate([pcm, pcm])
    return pcm[: int(seconds * 16000)]


def session(model_path: Path, pcm: np.ndarray, clients: int) -> dict:
    app = QCoreApplication.instance() or QCoreApplication([])
    model = TimedModel(engine.Model(model_path, backend="cpu", n_threads=1))
    sd = FakeSoundDevice()
    sd.add_device("Mic", rate=16000, channels=1, audio=None)
    ctl = SessionController(sd=sd, model_loader=lambda p, b: model)
    feed = CaptionFeed(Settings())
    feed.serve(BindAddress("127.0.0.1", 0))
    publish_s: list[float] = []
    original = feed.on_caption

    def timed_caption(update) -> None:  # noqa: ANN001
        t0 = time.perf_counter()
        original(update)
        publish_s.append(time.perf_counter() - t0)

    feed.on_caption = timed_caption  # type: ignore[method-assign]
    ctl.session_started.connect(feed.on_session_started)
    ctl.caption.connect(timed_caption)
    ctl.session_finished.connect(feed.on_session_finished)
    readers = None
    if clients:
        cmd = [sys.executable, str(ROOT / "bench/feed_clients.py"), feed.url, str(clients), "--cpu", "1"]
        readers = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        assert readers.stdout is not None and readers.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + 30
        while feed.server.clients < clients and time.monotonic() < deadline:  # type: ignore[union-attr]
            time.sleep(0.05)
    done: list[object] = []
    ctl.session_finished.connect(lambda r: (done.append(r), app.quit()))
    src = Source("0", "Mic", "input", "ALSA", 1, 16000, open_device=0)
    assert ctl.start(SessionConfig(model_path, [src], 480, None, token_ms=model.token_ms))

    pushed = threading.Event()

    def pace() -> None:
        t0 = time.monotonic()
        for k, start in enumerate(range(0, pcm.size, BLOCK)):
            time.sleep(max(0.0, t0 + k * BLOCK / 16000 - time.monotonic()))
            sd.streams[-1].push(pcm[start : start + BLOCK].reshape(-1, 1))
        pushed.set()

    stopper = QTimer()  # the controller is stopped from the GUI thread, as the Stop button does
    stopper.timeout.connect(lambda: pushed.is_set() and ctl.stop())
    stopper.start(50)
    threading.Thread(target=pace, daemon=True).start()
    app.exec()
    stopper.stop()
    result: dict = {"updates": len(model.feed_s), "feed_ms": [t * 1000 for t in model.feed_s],
                    "publish_ms": [t * 1000 for t in publish_s]}  # fmt: skip
    if readers is not None:
        out, _ = readers.communicate(timeout=60)
        result["readers"] = out.strip().splitlines()[-1]
    feed.shutdown()
    return result


def summary(ms: list[float]) -> str:
    mean, median, p95 = statistics.fmean(ms), statistics.median(ms), np.percentile(ms, 95)
    return f"mean {mean:.3f} ms, median {median:.3f}, p95 {p95:.3f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", type=Path, default=paths.bundled_demo_model())
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=40.0)
    args = ap.parse_args()
    os.sched_setaffinity(0, {0})
    load = os.getloadavg()[0]
    print(f"load average {load:.2f}; model {args.model.name}; {args.seconds:g} s of speech in real time")
    pcm = speech(args.seconds)
    alone = session(args.model, pcm, 0)
    crowd = session(args.model, pcm, args.clients)
    print(f"0 readers:   {alone['updates']} updates; worker feed {summary(alone['feed_ms'])}")
    print(f"             GUI thread per caption update in the feed: {summary(alone['publish_ms'])}")
    print(f"{args.clients} readers: {crowd['updates']} updates; worker feed {summary(crowd['feed_ms'])}")
    print(f"             GUI thread per caption update in the feed: {summary(crowd['publish_ms'])}")
    print(f"             readers: {crowd.get('readers')}")
    ratio = statistics.fmean(crowd["feed_ms"]) / statistics.fmean(alone["feed_ms"])
    ratio_p95 = np.percentile(crowd["feed_ms"], 95) / np.percentile(alone["feed_ms"], 95)
    print(f"worker time per update, {args.clients} readers / none: mean x{ratio:.3f}, p95 x{ratio_p95:.3f}")
    print(f"load average {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
