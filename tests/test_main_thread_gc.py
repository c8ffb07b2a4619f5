"""The cyclic collector runs on the Qt main thread only while a MainThreadCollector runs: cyclic
garbage made anywhere is freed there, however much other threads allocate, and CPython's own
per-generation thresholds decide when."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator

import pytest
from PySide6.QtCore import QObject

from captionist.main_thread_gc import FLOOR_MS, MAX_INTERVAL_MS, MIN_INTERVAL_MS, MainThreadCollector


@pytest.fixture
def collector(qapp) -> Iterator[MainThreadCollector]:
    was = gc.isenabled()
    thresholds = gc.get_threshold()
    made = MainThreadCollector(interval_ms=10)
    yield made
    made.stop()
    gc.set_threshold(*thresholds)
    assert gc.isenabled() == was


class Cycle:
    """Garbage only the cycle collector can free; says on which thread it was freed."""

    def __init__(self, freed_on: list[int]) -> None:
        self.me = self
        self.freed_on = freed_on
        self.qobject = QObject()  # what the app's cycles hold

    def __del__(self) -> None:
        self.freed_on.append(threading.get_ident())


def allocate_on_a_thread(containers: int) -> None:
    """What the audio callback and the worker do: allocate, far past every threshold."""

    def run() -> None:
        kept = [[i] for i in range(containers)]
        del kept

    worker = threading.Thread(target=run)
    worker.start()
    worker.join()


def test_cycles_are_freed_on_the_main_thread_not_where_allocation_happens(qtbot, collector) -> None:
    assert not gc.isenabled() and collector.running
    freed_on: list[int] = []
    Cycle(freed_on)
    allocate_on_a_thread(200_000)  # with the interpreter's collector, hundreds of collections there
    assert freed_on == []
    qtbot.waitUntil(lambda: freed_on != [], timeout=5000)
    assert freed_on == [threading.get_ident()]


def test_the_generation_collected_is_the_oldest_over_its_threshold(collector) -> None:
    gc.set_threshold(50, 3, 2)
    collector._timer.stop()  # driven by hand here
    gc.collect()
    assert collector.collect_due() is None  # nothing allocated since
    kept = []
    due = []
    for _ in range(15):
        kept.extend([] for _ in range(51))
        due.append(collector.collect_due())
    # as CPython counts: 51 new containers pass gen 0's threshold (50); 4 gen-0 collections pass gen
    # 1's (3); 3 gen-1 collections pass gen 2's (2), and the oldest due generation is the one collected
    assert due == [0, 0, 0, 0, 1] * 3
    kept.extend([] for _ in range(51))
    assert collector.collect_due() == 2
    assert collector.collections == [12, 3, 1]


def test_a_zero_threshold_still_means_no_collection(collector) -> None:
    gc.set_threshold(0)
    collector._timer.stop()
    kept = [[] for _ in range(10_000)]
    assert [collector.collect_due() for _ in range(30)] == [None] * 30
    assert kept


def ticks_to_the_floor() -> int:
    """Looks that find nothing due, from the shortest interval, until FLOOR_MS have gone by."""
    ticks, waited, interval = 0, 0, MIN_INTERVAL_MS
    while waited < FLOOR_MS:
        ticks, waited, interval = ticks + 1, waited + interval, min(interval * 2, MAX_INTERVAL_MS)
    return ticks


def test_a_burst_that_was_over_before_the_timer_looked_is_collected_within_the_floor(qapp) -> None:
    made = MainThreadCollector()
    try:
        made._timer.stop()
        gc.collect()
        kept = [[] for _ in range(10)]  # under every threshold: CPython would not collect either
        due = [made.collect_due() for _ in range(ticks_to_the_floor())]
        assert due == [None] * (len(due) - 1) + [0]
        assert kept
    finally:
        made.stop()


def test_it_looks_less_often_while_nothing_is_due_and_often_again_when_busy(qapp) -> None:
    made = MainThreadCollector()
    try:
        made._timer.stop()
        assert made.interval_ms == MIN_INTERVAL_MS
        gc.collect()
        intervals = []
        for _ in range(8):
            made.collect_due()
            intervals.append(made.interval_ms)
        assert intervals[:4] == [200, 400, 800, 1600] and set(intervals[4:]) == {MAX_INTERVAL_MS}
        kept = [[] for _ in range(gc.get_threshold()[0] + 1)]  # a session allocating
        assert made.collect_due() == 0 and made.interval_ms == MIN_INTERVAL_MS
        assert kept
    finally:
        made.stop()


def test_stopping_gives_collection_back_to_the_interpreter(qapp) -> None:
    assert gc.isenabled()
    made = MainThreadCollector()
    assert not gc.isenabled()
    made.stop()
    made.stop()  # twice is harmless
    assert gc.isenabled() and not made.running
    gc.disable()  # a program that had switched it off keeps it off
    try:
        again = MainThreadCollector()
        again.stop()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_what_survived_start_up_is_left_out_until_stop(qapp) -> None:
    freed_on: list[int] = []
    made = MainThreadCollector()
    try:
        old = Cycle(freed_on)
        made.freeze_survivors()
        assert gc.get_freeze_count() > 0
        del old  # garbage now, but frozen: a full collection leaves it
        gc.collect()
        assert freed_on == []
        Cycle(freed_on)  # made after: collected as usual
        gc.collect()
        assert len(freed_on) == 1
    finally:
        made.stop()
    assert gc.get_freeze_count() == 0
    gc.collect()  # given back: the old cycle goes too
    assert len(freed_on) == 2
