"""Waiting for a quiet machine before a measurement: the 1-minute load average, and a wait for it.

Shared by the benches that start measurements one after another (bench_fastconformer.py,
bench_vs_transcribe_cpp.py): ``wait_quiet(0.6, max_wait=120.0)`` returns the load a measurement
starts at.
"""

from __future__ import annotations

import os
import time


def load1() -> float:
    return os.getloadavg()[0]


def wait_quiet(threshold: float, max_wait: float) -> float:
    """Wait until the 1-minute load average is <= threshold; return it.

    Gives up after `max_wait` s, or once the load has stopped falling (less than 0.03 in 30 s): then
    what holds it up is other work, not the previous measurement's threads decaying out of it.
    """
    t0 = time.monotonic()
    history = [load1()]
    while history[-1] > threshold and time.monotonic() - t0 < max_wait:
        if len(history) > 15 and history[-16] - history[-1] < 0.03:
            break
        time.sleep(2.0)
        history.append(load1())
    waited = time.monotonic() - t0
    if waited > 1:
        print(f"    (waited {waited:.0f} s for load {load1():.2f})", flush=True)
    return load1()
