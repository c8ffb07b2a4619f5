"""Two threads in one stream: the second call is refused with a clear error while the first runs
(both families), nothing crashes, and the stream goes on working afterwards."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from captionist import _engine, engine


@pytest.mark.parametrize("family", ["voxtral", "parakeet"])
def test_a_second_thread_is_refused_while_a_feed_runs(fixture_ggufs: dict[str, Path], family: str) -> None:
    m = engine.Model(fixture_ggufs[family], backend="cpu", n_threads=1)
    s = _engine.Stream(m._m)
    rng = np.random.default_rng(0)
    long_feed = (0.1 * rng.standard_normal(16000 * 30)).astype(np.float32)
    running = threading.Event()
    done = threading.Event()
    refused: list[str] = []
    other: list[BaseException] = []

    def long_call() -> None:
        running.set()
        try:
            while True:
                try:
                    s.feed(long_feed)  # releases the GIL for its whole run
                    break
                except engine.EngineError as exc:  # the intruder's tiny feed got in first (a busy machine)
                    if "already in use" not in str(exc):
                        raise
        except BaseException as exc:  # noqa: BLE001 - any failure of the first caller is a test failure
            other.append(exc)
        finally:
            done.set()

    def intruder() -> None:
        running.wait()
        while not done.is_set():
            try:
                s.feed(np.zeros(1, np.float32))
            except engine.EngineError as exc:
                refused.append(str(exc))
            except BaseException as exc:  # noqa: BLE001
                other.append(exc)
                return

    threads = [threading.Thread(target=long_call), threading.Thread(target=intruder)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not other, other
    assert refused, "no call was refused while the long feed ran"
    assert all("already in use" in e and "\n" not in e for e in refused)
    # the stream is intact: it finishes, and a reset stream gives the same ids as a fresh one
    s.finish()
    s.reset()
    pcm = long_feed[: 16000 * 3]
    fresh = _engine.Stream(m._m)
    got, want = ([t[0] for r in (x.feed(pcm), x.finish()) for t in r["new_tokens"]] for x in (s, fresh))
    assert got == want
