"""The desktop app's entry point: ``run_gui()`` (what ``captionist`` with no arguments runs).

Usage::

    from captionist.ui.app import run_gui, build_app
    sys.exit(run_gui())
    parts = build_app(sd=fake_sd, model_loader=...)   # tests: everything wired, no event loop

Startup: settings are loaded (a corrupt file shows a notice), transcripts of sessions that did not
close (a crash) are rebuilt from their journals (the window says what was recovered and offers the
newest for "Export last session…"), the overlay is restored on its screen, and audio problems (no
PortAudio) show in the window instead of stopping the app. ``run_gui`` keeps one instance per user
(``single_instance``): a second launch brings the first window forward. Settings are saved half a
second after each change and at exit; at exit a running session is finished first.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

from captionist import paths
from captionist.audio.capture import Capture
from captionist.audio.devices import AudioUnavailable, import_sounddevice, list_sources
from captionist.pipeline.controller import ModelLoader, SessionController
from captionist.settings import Settings, load_settings, save_settings
from captionist.transcript.recovery import recover_sessions
from captionist.ui.level_preview import LevelPreview
from captionist.ui.main_window import MainWindow
from captionist.ui.overlay import CaptionOverlay
from captionist.ui.resources import app_icon, style_sheet
from captionist.ui.single_instance import InstanceGuard
from captionist.ui.tray import Tray


@dataclass
class AppParts:
    app: QApplication
    settings: Settings
    controller: SessionController
    overlay: CaptionOverlay
    window: MainWindow
    tray: Tray
    save_timer: QTimer
    at_exit: Callable[[], None]  # connected to aboutToQuit


def build_app(*, sd: Any = None, model_loader: ModelLoader | None = None) -> AppParts:
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("Captionist")
    app.setDesktopFileName("captionist")
    app.setWindowIcon(app_icon())
    app.setStyleSheet(style_sheet())
    loaded = load_settings()
    settings = loaded.settings
    audio_error = None
    if sd is None:
        try:
            sd = import_sounddevice()
        except AudioUnavailable as exc:
            audio_error = str(exc)

    def sources() -> list:
        if sd is None:
            raise AudioUnavailable(audio_error or "audio is unavailable")
        return list_sources(sd)

    controller = SessionController(sd=sd, **({"model_loader": model_loader} if model_loader else {}))
    overlay = CaptionOverlay(settings.overlay)
    overlay.restore_geometry()
    preview = LevelPreview(lambda chosen: Capture(chosen, sd=sd)) if sd is not None else None
    window = MainWindow(controller, settings, overlay=overlay, list_sources=sources, preview=preview)
    tray = Tray(app.windowIcon(), window, overlay, controller)
    app.setQuitOnLastWindowClosed(tray.icon is None)

    save_timer = QTimer(window)
    save_timer.setSingleShot(True)
    save_timer.setInterval(500)
    save_timer.timeout.connect(lambda: _save(window, settings))
    window.settings_changed.connect(save_timer.start)
    overlay.settings_changed.connect(save_timer.start)

    def at_exit() -> None:
        if preview is not None:
            preview.stop()
        controller.shutdown()
        save_timer.stop()
        _save(window, settings)

    app.aboutToQuit.connect(at_exit)
    if loaded.notice:
        window.show_error(loaded.notice)
    _recover(window, settings)
    if settings.overlay.visible:
        overlay.show()
    return AppParts(app, settings, controller, overlay, window, tray, save_timer, at_exit)


def _recover(window: MainWindow, settings: Settings) -> None:
    """Rebuild the transcripts of sessions a crash interrupted, say what was done and offer the newest
    one for "Export last session…". Nothing found in the folder can stop the app from starting."""
    try:
        report = recover_sessions(settings.transcript_folder())
    except Exception as exc:  # the startup boundary: report, never crash
        window.show_notice(f"could not check earlier transcripts: {exc}")
        return
    message = report.message()
    if message:
        window.show_recovery_notice(message, report.latest)


def _save(window: MainWindow, settings: Settings) -> None:
    try:
        save_settings(settings)
    except OSError as exc:
        window.show_notice(f"could not save settings: {exc}")


def bring_forward(window: MainWindow) -> None:
    """Show ``window`` on top (a second launch asked for it)."""
    if window.isMinimized():
        window.showNormal()
    window.show()
    window.raise_()
    window.activateWindow()


def run_gui() -> int:
    """Start the desktop app and run until it quits; returns the exit status.

    If Captionist already runs for this user, its window is brought forward and this returns 0
    without opening anything (no second capture, transcript or recovery)."""
    app = QApplication.instance() or QApplication(sys.argv[:1])
    guard = InstanceGuard()
    if not guard.claim():
        print("Captionist is already running: its window was brought forward.", file=sys.stderr)
        return 0
    parts = build_app()
    guard.activated.connect(lambda: bring_forward(parts.window))
    app.aboutToQuit.connect(guard.close)
    parts.window.show()
    if not parts.settings.first_run_done:  # first run: guide the user to a model
        parts.settings.first_run_done = True
        parts.save_timer.start()
        if parts.window.model_combo.count() == 0:
            parts.window.open_models()
        elif parts.window.selected_model() == paths.bundled_demo_model():
            parts.window.show_notice(
                "Using the built-in demo model: it knows 28 words (digits, yes/no, directions…). "
                "For everyday speech, get a full model in Models…"
            )
    return int(parts.app.exec())
