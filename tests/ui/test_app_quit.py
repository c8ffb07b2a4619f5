"""Quitting while a session still finishes (the worker transcribing what it has, a hung engine, a
dead share): nothing of the app stays on screen, the settings are on disk at once, and a launch in
the meantime starts a new app instead of asking the finishing one to come forward."""

from __future__ import annotations

import json
import threading
from types import SimpleNamespace

import pytest
from PySide6.QtWidgets import QApplication, QSystemTrayIcon, QWidget

from captionist import paths
from captionist.pipeline.session_state import SessionState
from captionist.ui import app as app_module
from captionist.ui.app import build_app
from captionist.ui.single_instance import InstanceGuard
from tests.conftest import speech_like
from tests.fakes.fake_hotkeys import FakeHotkeyFactory
from tests.fakes.slow_engine import BlockingModel


def test_quitting_withdraws_the_tray_and_saves_before_the_session_finishes(
    qtbot, fake_sd, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(QSystemTrayIcon, "isSystemTrayAvailable", staticmethod(lambda: True))
    fake_sd.add_device("Mic", rate=16000, default=True, audio=speech_like(16000, [(1.0, True)]))
    model = BlockingModel()
    parts = build_app(
        sd=fake_sd, model_loader=lambda path, backend: model, shortcut_listener=FakeHotkeyFactory()
    )
    qtbot.addWidget(parts.window)
    qtbot.addWidget(parts.overlay)
    parts.app.aboutToQuit.disconnect(parts.at_exit)
    assert parts.tray.icon is not None and parts.tray.icon.isVisible()
    path = paths.models_dir() / "m.gguf"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"GGUF")
    parts.window.refresh_models()
    qtbot.waitUntil(lambda: parts.window.model_info is not None)
    assert parts.window.start_session()
    assert model.entered.wait(10)  # the engine is stuck in a feed
    parts.window.transcript.zoom.set_size(21, notify=True)  # a change the save timer has not written yet
    assert parts.settings.transcript_text_pt == 21
    during: dict = {}

    def while_finishing() -> None:
        assert model.entered.wait(10)
        during["tray visible"] = parts.tray.icon.isVisible()
        during["saved pt"] = json.loads(paths.settings_file().read_text())["transcript_text_pt"]
        model.release()

    threading.Timer(0.5, while_finishing).start()  # the engine comes back after a while
    parts.at_exit()  # what quit runs; returns once the session has finished
    assert during == {"tray visible": False, "saved pt": 21}
    assert parts.controller.state is SessionState.IDLE


def test_a_launch_while_the_last_one_finishes_starts_a_new_app(qtbot, monkeypatch) -> None:
    app = QApplication.instance()
    window = QWidget()
    qtbot.addWidget(window)
    seen: list[bool] = []

    def finishing() -> None:  # build_app's at_exit, blocked on a session that is still finishing
        second = InstanceGuard()  # a launch meanwhile
        seen.append(second.claim())
        second.close()

    def quit_at_once() -> int:  # stands for app.exec(): the user quits
        app.aboutToQuit.emit()
        return 0

    def build_app() -> SimpleNamespace:
        app.aboutToQuit.connect(finishing)
        settings = SimpleNamespace(first_run_done=True)
        return SimpleNamespace(app=SimpleNamespace(exec=quit_at_once), window=window, settings=settings)

    monkeypatch.setattr(app_module, "build_app", build_app)
    try:
        assert app_module.run_gui() == 0
    finally:
        app.aboutToQuit.disconnect(finishing)
    assert seen == [True]  # it is the app now: its own window opens
