"""Python's cyclic garbage collector, run only on the Qt main thread.

Usage (once the Qt application exists, on its thread)::

    from captionist.main_thread_gc import MainThreadCollector
    collector = MainThreadCollector(app)   # automatic collection off; a timer collects on this thread
    collector.freeze_survivors()           # once started: what start-up made is never scanned again
    collector.stop()                       # collection goes back to the interpreter (and unfreezes)

Why: CPython runs its cyclic collector on whichever thread happens to allocate when a generation's
threshold is passed. In Captionist that is often the audio callback (PortAudio's thread, measured),
the inference worker or the transcript's disk thread. What the collector frees there includes the
QObjects of a finished session or download that sit in reference cycles (a signal connected to a
lambda that holds its owner): deleting a QObject away from its own thread while the main thread
handles its deferred deletes is a segfault in ``~QObject`` (seen in the test suite about one run in
four, stop 41). A full collection of a long meeting's objects on the audio callback also holds up
the capture it should be serving.

So automatic collection is switched off for the whole process and a timer on the main thread asks
what CPython itself would: the oldest generation whose count is over its threshold
(``gc.get_threshold()``, so a program's own tuning still counts) is collected. CPython checks at
every allocation, so a burst (a thread that allocates a lot and frees it again) passes a threshold
for it, but can be over before the timer looks; so once ``FLOOR_MS`` have gone by without a
collection the youngest generation is collected anyway if anything was allocated, which also moves
the older generations' counts on. Objects freed by their last reference going away are freed where
that happens, as before; only the cycle collector moves.

The timer looks every ``MIN_INTERVAL_MS`` while collections are due (a session runs), and twice
as long after each look that finds none, up to ``MAX_INTERVAL_MS``: an app waiting in the tray
wakes less than once a second for it.

A full collection scans every object the app has: measured 20 ms for the app just started (68,000
objects), up to 44 ms in a 15-minute soak, a stall of the window each time. ``freeze_survivors``,
called once start-up is done, collects and then moves everything left (modules, widgets, settings)
out of reach of later collections (``gc.freeze``), so those scan only what was made since. The
cost: a cycle among start-up's objects that becomes garbage later stays until ``stop``.
"""

from __future__ import annotations

import gc

from PySide6.QtCore import QObject, QTimer

MIN_INTERVAL_MS = 100
MAX_INTERVAL_MS = 1600
FLOOR_MS = 1000


class MainThreadCollector(QObject):
    """While it runs, cyclic garbage is collected on this object's thread and nowhere else."""

    def __init__(self, parent: QObject | None = None, *, interval_ms: int = MIN_INTERVAL_MS) -> None:
        super().__init__(parent)
        self._restore = gc.isenabled()
        self.collections = [0, 0, 0]  # run by this collector, per generation
        self._min_ms = interval_ms
        self._since_ms = 0  # timer time since this collector last collected
        self._stopped = False
        self._froze = False
        gc.disable()
        self._timer = QTimer(self)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self.collect_due)
        self._timer.start()

    def collect_due(self) -> int | None:
        """Collect the generation CPython would collect now, if any, or the youngest once the floor is
        reached; returns the generation collected (None: none was due). Sets the next interval."""
        counts, thresholds = gc.get_count(), gc.get_threshold()
        if not thresholds[0]:  # a threshold of 0 switches collection off (gc.set_threshold(0))
            return None
        due = [g for g in range(min(len(counts), len(thresholds))) if 0 < thresholds[g] < counts[g]]
        self._since_ms += self._timer.interval()
        if due:
            generation = max(due)
            self._timer.setInterval(self._min_ms)  # busy: look often
        else:
            self._timer.setInterval(min(self._timer.interval() * 2, max(MAX_INTERVAL_MS, self._min_ms)))
            if self._since_ms < FLOOR_MS or counts[0] <= 0:
                return None
            generation = 0
        gc.collect(generation)
        self.collections[generation] += 1
        self._since_ms = 0
        return generation

    def freeze_survivors(self) -> None:
        """Collect everything now, and leave what survives out of every later collection."""
        if self._stopped:
            return
        gc.collect()
        gc.freeze()
        self._froze = True

    @property
    def interval_ms(self) -> int:
        return self._timer.interval()

    @property
    def running(self) -> bool:
        return not self._stopped

    def stop(self) -> None:
        """Stop collecting here and give collection back to the interpreter (as it was before)."""
        if self._stopped:
            return
        self._stopped = True
        self._timer.stop()
        if self._froze:
            gc.unfreeze()
        if self._restore:
            gc.enable()
