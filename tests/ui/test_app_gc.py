"""The desktop app collects cyclic garbage on its GUI thread only, from start to exit."""

from __future__ import annotations

import gc
import threading
from types import SimpleNamespace

import pytest
from PySide6.QtWidgets import QApplication, QWidget

from captionist.main_thread_gc import MainThreadCollector
from tests.test_main_thread_gc import Cycle, allocate_on_a_thread


def test_the_app_frees_cycles_on_the_gui_thread_while_it_runs(qtbot, monkeypatch: pytest.MonkeyPatch) -> None:
    from captionist.ui import app as app_module

    seen: dict = {}
    window = QWidget()
    qtbot.addWidget(window)

    def run_the_loop() -> int:  # stands for app.exec(): the app is up, a session's threads allocate
        app = QApplication.instance()
        seen["enabled during build"] = built_with_gc
        seen["enabled while running"] = gc.isenabled()
        seen["start-up frozen"] = gc.get_freeze_count() > 0
        collectors = [c for c in app.findChildren(MainThreadCollector) if c.running]
        seen["collectors"] = len(collectors)
        freed_on: list[int] = []
        Cycle(freed_on)
        allocate_on_a_thread(200_000)
        qtbot.waitUntil(lambda: freed_on != [], timeout=5000)
        seen["freed on"] = freed_on
        for c in collectors:
            c.stop()  # what aboutToQuit does
        return 0

    built_with_gc = None

    def build_app():
        nonlocal built_with_gc
        built_with_gc = gc.isenabled()
        settings = SimpleNamespace(first_run_done=True)
        return SimpleNamespace(app=SimpleNamespace(exec=run_the_loop), window=window, settings=settings)

    monkeypatch.setattr(app_module, "build_app", build_app)
    monkeypatch.setattr(app_module, "InstanceGuard", lambda: SimpleNamespace(
        claim=lambda: True, close=lambda: None, activated=SimpleNamespace(connect=lambda _: None)
    ))  # fmt: skip
    assert app_module.run_gui() == 0
    assert seen == {
        "enabled during build": False,  # the session threads start from the window: collected here too
        "enabled while running": False,
        "start-up frozen": True,
        "collectors": 1,
        "freed on": [threading.get_ident()],
    }
    assert gc.isenabled() and gc.get_freeze_count() == 0
