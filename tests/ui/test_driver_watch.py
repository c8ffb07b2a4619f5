"""ui.driver_watch: a GPU driver's start that takes far too long is explained in the window (and
what quitting does), the line goes when the start ends, and no timer runs while nothing starts."""

from __future__ import annotations

import threading
from pathlib import Path

from captionist.backend_guard import BackendGuard, BackendStage
from captionist.ui.banner import Banner, BannerKind
from captionist.ui.driver_watch import SLOW_S, DriverWatch, slow_message


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _watch(qtbot, tmp_path: Path) -> tuple[BackendGuard, Clock, Banner, DriverWatch]:
    clock = Clock()
    guard = BackendGuard(tmp_path, clock=clock)
    banner = Banner(BannerKind.INFO)
    qtbot.addWidget(banner)
    return guard, clock, banner, DriverWatch(guard, banner)


def test_a_start_that_hangs_is_explained_until_it_ends(qtbot, tmp_path: Path) -> None:
    guard, clock, banner, watch = _watch(qtbot, tmp_path)
    assert not watch.timer.isActive()  # nothing is starting: no wakeups
    release, entered = threading.Event(), threading.Event()

    def load() -> None:  # the model-loading thread, stuck in the driver
        with guard.trial("vulkan", BackendStage.START_DRIVER):
            entered.set()
            release.wait(30)

    thread = threading.Thread(target=load)
    thread.start()
    try:
        assert entered.wait(10)
        qtbot.waitUntil(watch.timer.isActive)  # the queued signal reached the GUI thread
        assert abs(watch.timer.interval() - SLOW_S * 1000) <= 1
        assert banner.text() == ""
        clock.now += SLOW_S + 1
        watch.check()  # what the timer does when it fires
        assert banner.text() == slow_message("vulkan", BackendStage.START_DRIVER)
        assert "Starting Vulkan has taken over 45 seconds" in banner.text()
        assert "If it never ends, quit Captionist: its next start leaves Vulkan off" in banner.text()
        assert not watch.timer.isActive()
    finally:
        release.set()
        thread.join(10)
    qtbot.waitUntil(lambda: banner.text() == "")
    assert not watch.timer.isActive()


def test_a_quick_start_shows_nothing_and_stops_the_timer(qtbot, tmp_path: Path) -> None:
    guard, clock, banner, watch = _watch(qtbot, tmp_path)
    with guard.trial("cuda", BackendStage.OPEN_MODEL):
        assert watch.timer.isActive()  # on the GUI thread the signal arrives at once
        clock.now += 3
    assert banner.text() == "" and not watch.timer.isActive()


def test_the_timer_waits_for_the_youngest_slow_candidate(qtbot, tmp_path: Path) -> None:
    guard, clock, banner, watch = _watch(qtbot, tmp_path)
    with guard.trial("vulkan", BackendStage.START_DRIVER):
        clock.now += SLOW_S + 5
        with guard.trial("vulkan", BackendStage.OPEN_MODEL):  # the old one is slow, the new one not yet
            assert banner.text() == slow_message("vulkan", BackendStage.START_DRIVER)
            assert abs(watch.timer.interval() - SLOW_S * 1000) <= 1
            slow_load = slow_message("cuda", BackendStage.OPEN_MODEL)
            assert slow_load.startswith("Loading the model on CUDA has taken over 45 seconds.")
            assert "can take minutes while the driver compiles its code, once" in slow_load
        assert watch.timer.isActive() is False
    assert banner.text() == ""
