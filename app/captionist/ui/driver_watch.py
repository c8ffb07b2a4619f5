"""Says so when a GPU driver's start, or a model's first run on a GPU, is taking very long: the
driver may be stuck, and quitting then turns that backend off for the next start.

Usage::

    watch = DriverWatch(guard, window.info_banner, parent=window)   # nothing else to call

A driver that hangs (instead of crashing) leaves the model loading forever, behind a "loading…"
that never ends. ``BackendGuard`` tells the watch when a trial begins or ends (from the loading
thread: a queued signal brings it here); a single-shot timer then waits until the oldest running
trial is ``SLOW_S`` old, and the info banner says what is going on and what quitting does (the
trial is left behind, so ``backend_guard`` turns that backend off at the next start). The line goes
when the trial ends. No timer runs while no trial does. GUI thread only.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, QTimer, Signal

from captionist.backend_guard import BackendGuard, BackendStage, display_name
from captionist.pipeline.signals import emit
from captionist.ui.banner import Banner, Problem

SLOW_S = 45.0  # far past a healthy start (Vulkan's shaders, CUDA's first kernels: seconds)


def slow_message(backend: str, stage: BackendStage) -> str:
    name = display_name(backend)
    if stage is BackendStage.START_DRIVER:
        what = f"Starting {name} has taken over {SLOW_S:.0f} seconds: its graphics driver may be stuck."
    else:  # a first run may compile GPU code (CUDA's PTX for GPUs the build has no machine code for)
        what = (
            f"Loading the model on {name} has taken over {SLOW_S:.0f} seconds. A first run on a GPU "
            f"can take minutes while the driver compiles its code, once."
        )
    return f"{what} If it never ends, quit Captionist: its next start leaves {name} off and uses the CPU."


class DriverWatch(QObject):
    _changed = Signal()  # a trial began or ended, on any thread

    def __init__(self, guard: BackendGuard, banner: Banner, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.guard, self.banner = guard, banner
        self.shown: str | None = None
        self.timer = QTimer(self)
        self.timer.setSingleShot(True)
        self.timer.timeout.connect(self.check)
        self._changed.connect(self.check)  # queued from the loading thread
        guard.add_listener(lambda: emit(self._changed))

    def check(self) -> None:
        """Show, replace or withdraw the line for the oldest running trial; wait for the next one."""
        running = sorted(self.guard.running(), key=lambda r: -r[2])
        slow = next(((b, stage) for b, stage, age in running if age >= SLOW_S), None)
        message = slow_message(*slow) if slow else None
        if message != self.shown:
            if self.shown is not None:
                self.banner.withdraw(self.shown)
            if message is not None:
                self.banner.show_message(message, Problem.BACKEND_STUCK)
            self.shown = message
        waiting = [SLOW_S - age for _, _, age in running if age < SLOW_S]
        if waiting:
            self.timer.start(max(1, round(min(waiting) * 1000)))
        else:
            self.timer.stop()
