"""The desktop app's entry point: ``run_gui()`` (what ``captionist`` with no arguments runs).

Usage::

    from captionist.ui.app import run_gui, build_app
    sys.exit(run_gui())
    parts = build_app(sd=fake_sd, model_loader=..., shortcut_listener=fake)  # tests: no event loop

Startup: settings are loaded (a corrupt file shows a notice), transcripts of sessions that did not
close (a crash) are rebuilt from their journals (the window says what was recovered and offers the
newest for "Export last session…"), the overlay is restored on its screen, global shortcuts start
(pynput; where they cannot, they are off and Preferences says why), and audio problems (no
PortAudio) show in the window instead of stopping the app. ``run_gui`` keeps one instance per user
(``single_instance``): a second launch brings the first window forward. Settings are saved half a
second after each change and at exit; at exit a running session is finished first. The caption feed
starts if it is switched on (a port in use shows a notice; the app goes on without it); keyword
alerts are highlighted in the overlay and the transcript, sent on the feed and announced. A problem
that comes up while the window is closed to the tray or minimized is a tray notification too. A GPU
driver that crashed an earlier run is not started again and the window says so once
(``backend_guard``); models bound for a GPU load in a crash trial (``pipeline.guarded_loader``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

from captionist import paths
from captionist.alerts.keyword_alerts import KeywordAlerts
from captionist.audio.bounded_call import stuck_for
from captionist.audio.capture import Capture
from captionist.audio.devices import AudioUnavailable, list_sources
from captionist.audio.sound_system import START_WAIT_S, STUCK_SERVER_HINT, shared_sound_system
from captionist.autostart import LoginItem, login_item_for_platform
from captionist.backend_guard import user_guard
from captionist.feed.caption_feed import CaptionFeed
from captionist.main_thread_gc import MainThreadCollector
from captionist.pipeline.controller import ModelLoader, SessionController
from captionist.pipeline.guarded_loader import guarded_loader
from captionist.qt_none_guard import guard_none_refcount
from captionist.settings import Settings, load_settings, save_settings
from captionist.shortcut_keys import ShortcutAction, key_set
from captionist.transcript.folders import remembered_folders
from captionist.transcript.recovery import RecoveryReport
from captionist.ui.alert_notifier import AlertNotifier
from captionist.ui.away_notifier import AwayNotifier
from captionist.ui.banner import Problem
from captionist.ui.driver_watch import DriverWatch
from captionist.ui.global_shortcuts import GlobalShortcuts, ListenerFactory, PortalFactory
from captionist.ui.level_preview import LevelPreview
from captionist.ui.main_window import MainWindow
from captionist.ui.overlay import CLICK_THROUGH_SHORTCUT, CaptionOverlay
from captionist.ui.portal_shortcuts import start_portal_shortcuts
from captionist.ui.pynput_hotkeys import start_pynput_hotkeys
from captionist.ui.resources import app_icon, style_sheet
from captionist.ui.single_instance import InstanceGuard
from captionist.ui.sound_system_watch import SoundSystemWatch
from captionist.ui.startup_recovery import StartupRecovery
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
    shortcuts: GlobalShortcuts
    feed: CaptionFeed
    alerts: KeywordAlerts
    notifier: AlertNotifier
    away: AwayNotifier  # problems shown while the window is away: a tray notification


def build_app(
    *,
    sd: Any = None,
    model_loader: ModelLoader | None = None,
    shortcut_listener: ListenerFactory | None = None,
    portal_listener: PortalFactory | None = None,
    login_item: LoginItem | None = None,
) -> AppParts:
    """Everything wired, nothing shown but the overlay. ``shortcut_listener``: the global shortcuts'
    listener factory (default: pynput); ``portal_listener``: Wayland's (default: the desktop portal,
    unless a ``shortcut_listener`` is given: a test's fake keyboard never reaches the real desktop);
    ``login_item``: where "start at login" is written (default: this platform's)."""
    started = datetime.now()  # sessions of this run start later: recovery leaves them alone
    guard_none_refcount()  # PySide6 6.12 on Python 3.11 would abort the app within minutes
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("Captionist")
    app.setDesktopFileName("captionist")
    app.setWindowIcon(app_icon())
    app.setStyleSheet(style_sheet())
    loaded = load_settings()
    settings = loaded.settings
    audio_error = None
    sound_system = None
    if sd is None:  # PortAudio starts on a thread: a sound server that hangs must not hang the app
        sound_system = shared_sound_system()
        sound_system.wait(START_WAIT_S)
        if sound_system.error:
            audio_error = sound_system.error
        else:
            sd = sound_system  # sounddevice's functions once ready; AudioUnavailable until then

    def sources() -> list:
        if sd is None:
            raise AudioUnavailable(audio_error or "audio is unavailable")
        waited = stuck_for()
        if waited is not None:  # each pactl call would wait its 3 s for it, on the window's thread
            raise AudioUnavailable(
                f"the sound system is not answering (for {waited:.0f} s; {STUCK_SERVER_HINT}). "
                "The audio sources are listed once it answers."
            )
        return list_sources(sd)

    backend_guard = user_guard()
    crashes = backend_guard.install()  # a GPU driver that crashed a run stays off
    controller = SessionController(sd=sd, model_loader=model_loader or guarded_loader(backend_guard))
    overlay = CaptionOverlay(settings.overlay)
    overlay.restore_geometry()
    meters = (lambda chosen: Capture(chosen, sd=sd, cancel_echo=False)) if sd is not None else None
    preview = LevelPreview(meters) if meters is not None else None
    shortcuts = GlobalShortcuts(
        settings.shortcuts,
        shortcut_listener or start_pynput_hotkeys,
        start_portal=portal_listener or (start_portal_shortcuts if shortcut_listener is None else None),
    )
    feed = CaptionFeed(settings)
    feed.attach(controller)
    alerts = KeywordAlerts(settings.alerts.keywords)
    alerts.attach(controller)  # after the feed: a keyword's alert follows its words
    window = MainWindow(
        controller,
        settings,
        overlay=overlay,
        list_sources=sources,
        preview=preview,
        shortcuts=shortcuts,
        login_item=login_item or login_item_for_platform(),
        feed=feed,
        alerts=alerts,
        backend_guard=backend_guard,
    )
    shortcuts.setParent(window)
    tray = Tray(app.windowIcon(), window, overlay, controller)
    _connect_shortcuts(shortcuts, window, overlay, tray)
    notifier = AlertNotifier(settings.alerts, show_message=tray.show_message, fallback=window.show_notice)
    away = AwayNotifier(window, show_message=tray.show_message)
    window.error_banner.added.connect(away.problem)
    _connect_alerts(settings, alerts, feed, notifier, window, overlay)
    app.setQuitOnLastWindowClosed(tray.icon is None)

    save_timer = QTimer(window)
    save_timer.setSingleShot(True)
    save_timer.setInterval(500)
    save_timer.timeout.connect(lambda: _save(window, settings))
    window.settings_changed.connect(save_timer.start)
    overlay.settings_changed.connect(save_timer.start)
    feed.settings_changed.connect(save_timer.start)

    def at_exit() -> None:
        # Quit has closed the windows. Finishing a session can take a while (the worker transcribes
        # the audio it still has; a hung engine or dead share is waited for, up to its bound), so the
        # tray icon goes first and the settings are saved now: a relaunch meanwhile starts a new app
        # (run_gui gave up the instance first), whose settings this one must not overwrite later.
        tray.withdraw()
        save_timer.stop()
        _save(window, settings)
        shortcuts.stop()
        feed.shutdown()
        if preview is not None:
            preview.stop()
        controller.shutdown()

    app.aboutToQuit.connect(at_exit)
    if loaded.notice:
        window.show_error(loaded.notice)
    for crash in crashes:
        window.info_banner.show_message(crash.message(), Problem.BACKEND_CRASH)
    DriverWatch(backend_guard, window.info_banner, parent=window)  # a driver that seems stuck: say so
    SoundSystemWatch(sound_system, window.sound_system_answers, parent=window)  # a hung server answers
    _recover(window, settings, started)
    tray.presence.apply()  # the overlay as chosen (only while captioning: hidden until a session)
    window.settings_changed.connect(tray.presence.apply)  # Preferences' "only while captioning"
    shortcuts.apply()
    _connect_feed_errors(feed, window)
    feed.apply()
    return AppParts(app, settings, controller, overlay, window, tray, save_timer, at_exit, shortcuts, feed,
                    alerts, notifier, away)  # fmt: skip


def _connect_feed_errors(feed: CaptionFeed, window: MainWindow) -> None:
    """The feed's trouble (a port in use, a captions file that cannot be written, found at start or
    any time later on the file's thread) is a red line until it ends; the app runs on without it,
    and Preferences says the same and can change the port or the file."""

    def show() -> None:
        window.error_banner.resolve(Problem.FEED)
        if feed.error:
            window.show_error(f"caption feed: {feed.error}", Problem.FEED)

    feed.changed.connect(show)


def _connect_shortcuts(
    shortcuts: GlobalShortcuts, window: MainWindow, overlay: CaptionOverlay, tray: Tray
) -> None:
    """Each global shortcut does what its button or menu entry does; the click-through hint names the
    global shortcut while it works. The window's own Ctrl+Shift+T stays (it works where global
    shortcuts cannot), except while a global shortcut has the same keys: one press would act twice."""
    actions: dict[ShortcutAction, Callable[[], None]] = {
        ShortcutAction.START_STOP: window.toggle_session,  # as the Start/Stop button and the tray
        ShortcutAction.SHOW_OVERLAY: lambda: tray.set_overlay_visible(not overlay.settings.visible),
        ShortcutAction.CLICK_THROUGH: lambda: overlay.set_click_through(not overlay.is_click_through()),
    }
    shortcuts.triggered.connect(lambda action: actions[action]())
    in_window = key_set(CLICK_THROUGH_SHORTCUT)

    def on_state() -> None:
        active = shortcuts.active_keys()
        overlay.set_global_shortcut(active.get(ShortcutAction.CLICK_THROUGH))
        if window.click_through_shortcut is not None:
            taken = any(_key_set_or_none(keys) == in_window for keys in active.values())
            window.click_through_shortcut.setEnabled(not taken)

    shortcuts.state_changed.connect(on_state)


def _key_set_or_none(keys: str) -> frozenset[str] | None:
    """The keys of a Qt sequence; None for the desktop portal's own descriptions ("Super+T")."""
    try:
        return key_set(keys)
    except ValueError:
        return None


def _connect_alerts(
    settings: Settings,
    alerts: KeywordAlerts,
    feed: CaptionFeed,
    notifier: AlertNotifier,
    window: MainWindow,
    overlay: CaptionOverlay,
) -> None:
    """A spoken keyword goes to the feed and the notifier; the keywords and their colour to the
    overlay and the transcript; any settings change restyles the caption page."""
    alerts.hit.connect(feed.publish_alert)
    alerts.hit.connect(notifier.notify)

    def show_keywords(*_: object) -> None:
        overlay.set_keywords(alerts.keywords, settings.alerts.color)
        window.transcript.set_keywords(alerts.keywords, settings.alerts.color)

    def restyle() -> None:
        show_keywords()
        feed.restyle()

    alerts.keywords_changed.connect(show_keywords)
    window.settings_changed.connect(restyle)
    show_keywords()


RECOVERY_WAIT_S = 2.0  # how long the window waits for crash recovery before it opens anyway


def _recover(window: MainWindow, settings: Settings, started: datetime) -> None:
    """Rebuild the transcripts of sessions a crash interrupted, in the transcript folder and in every
    folder a session was written to (``transcript.folders``), say what was done and offer the newest
    one for "Export last session…". Nothing found in the folders can stop the app from starting, and
    a folder whose disk does not answer only delays the report (``StartupRecovery``)."""

    def folders() -> list[Path]:
        return [settings.transcript_folder(), paths.default_transcript_dir(), *remembered_folders()]

    recovery = StartupRecovery(parent=window)
    recovery.finished.connect(lambda report: _show_recovery(window, report))
    recovery.start(folders, started)
    if not recovery.wait(RECOVERY_WAIT_S):
        window.show_notice(
            f"Checking {recovery.searching or 'the transcript folders'} for interrupted sessions: "
            "its disk is slow to answer."
        )


def _show_recovery(window: MainWindow, report: object) -> None:
    if not isinstance(report, RecoveryReport):  # the startup boundary: report, never crash
        window.show_notice(f"could not check earlier transcripts: {report}")
        return
    message = report.message()
    if message:
        window.show_recovery_notice(message, report.latest)


def _save(window: MainWindow, settings: Settings) -> None:
    try:
        save_settings(settings)
    except OSError as exc:
        window.show_notice(f"could not save settings: {exc}")


def _can_wait_in_tray(parts: AppParts) -> bool:
    window = parts.window
    quiet = not window.error_banner.text() and not window.info_banner.text()
    return parts.tray.icon is not None and parts.settings.first_run_done and quiet


def bring_forward(window: MainWindow) -> None:
    """Show ``window`` on top (a second launch asked for it)."""
    if window.isMinimized():
        window.showNormal()
    window.show()
    window.raise_()
    window.activateWindow()


def run_gui(*, in_tray: bool = False) -> int:
    """Start the desktop app and run until it quits; returns the exit status.

    If Captionist already runs for this user, its window is brought forward and this returns 0
    without opening anything (no second capture, transcript or recovery). ``in_tray`` (how a login
    item starts it): the window stays closed to the tray, unless there is no tray icon to reopen it
    from, it is the first run, or the window has something to say (a problem, a recovered
    transcript, a missing source)."""
    app = QApplication.instance() or QApplication(sys.argv[:1])
    guard = InstanceGuard()
    if not guard.claim():
        print("Captionist is already running: its window was brought forward.", file=sys.stderr)
        return 0
    # First thing at quit, before the session finishes: a launch while this one finishes out of
    # sight must start a new app, not ask this one, which no longer answers, to come forward.
    app.aboutToQuit.connect(guard.close)
    collector = MainThreadCollector(app)  # cycles are freed here, never on the audio or worker threads
    app.aboutToQuit.connect(collector.stop)
    parts = build_app()
    collector.freeze_survivors()  # start-up's objects: never scanned again (main_thread_gc)
    guard.activated.connect(lambda: bring_forward(parts.window))
    if not (in_tray and _can_wait_in_tray(parts)):
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
