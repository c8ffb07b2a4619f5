"""``captionist --in-tray`` (what a login item runs): the app starts with its window closed to the
tray, unless it could not be reopened from there or the window has something to say first."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator
from types import SimpleNamespace

import pytest
from PySide6.QtWidgets import QApplication, QSystemTrayIcon

from captionist import paths
from captionist.main_thread_gc import MainThreadCollector
from captionist.settings import Settings, save_settings
from captionist.ui import app as app_module
from captionist.ui.app import AppParts, build_app
from tests.fakes.fake_engine import FakeModel
from tests.fakes.fake_hotkeys import FakeHotkeyFactory


@pytest.fixture
def start(qtbot, fake_sd, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., dict]]:
    """``start(in_tray=..., tray=...)``: run_gui with the real build_app on fake devices; returns
    what the user would see once the event loop runs: the window shown or not, and the banners."""
    monkeypatch.setattr(app_module, "InstanceGuard", lambda: SimpleNamespace(
        claim=lambda: True, close=lambda: None, activated=SimpleNamespace(connect=lambda _: None)
    ))  # fmt: skip
    built: list[AppParts] = []

    def run(*, in_tray: bool, tray: bool = True) -> dict:
        monkeypatch.setattr(QSystemTrayIcon, "isSystemTrayAvailable", staticmethod(lambda: tray))
        seen: dict = {}

        def build() -> AppParts:
            parts = build_app(
                sd=fake_sd, model_loader=lambda p, b: FakeModel(), shortcut_listener=FakeHotkeyFactory()
            )
            qtbot.addWidget(parts.window)
            qtbot.addWidget(parts.overlay)
            built.append(parts)

            def exec_() -> int:  # the event loop: what is on screen now
                seen.update(shown=parts.window.isVisible(), problem=parts.window.error_banner.text())
                return 0

            return dataclasses.replace(parts, app=SimpleNamespace(exec=exec_))

        monkeypatch.setattr(app_module, "build_app", build)
        assert app_module.run_gui(in_tray=in_tray) == 0
        return seen

    yield run
    app = QApplication.instance()
    for parts in built:
        app.aboutToQuit.disconnect(parts.at_exit)
        parts.save_timer.stop()
        if parts.tray.icon is not None:
            parts.tray.icon.hide()
    for collector in app.findChildren(MainThreadCollector):
        collector.stop()


def returning_user(fake_sd) -> None:
    fake_sd.add_device("Mic", rate=16000, default=True)
    settings = Settings()
    settings.first_run_done = True
    save_settings(settings)


def test_at_login_the_window_waits_in_the_tray(start, fake_sd) -> None:
    returning_user(fake_sd)
    assert start(in_tray=True) == {"shown": False, "problem": ""}
    assert fake_sd.streams == []  # and nothing is recorded while it waits (test_source_meters.py)


def test_started_by_hand_the_window_opens(start, fake_sd) -> None:
    returning_user(fake_sd)
    assert start(in_tray=False)["shown"]


def test_without_a_tray_icon_to_reopen_it_the_window_opens(start, fake_sd) -> None:
    returning_user(fake_sd)
    assert start(in_tray=True, tray=False)["shown"]


def test_the_first_run_opens_the_window(start, fake_sd) -> None:
    fake_sd.add_device("Mic", rate=16000, default=True)
    assert start(in_tray=True)["shown"]


def test_a_problem_at_start_opens_the_window(start, fake_sd) -> None:
    returning_user(fake_sd)
    saved = json.loads(paths.settings_file().read_text())
    paths.settings_file().write_text(json.dumps({**saved, "latency_ms": "fast"}))  # partly invalid
    seen = start(in_tray=True)
    assert seen["shown"] and "ignored invalid settings" in seen["problem"]
