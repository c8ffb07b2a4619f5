"""The main window: sources with meters, model picker, latency and language, Start/Stop, transcript.

Usage::

    win = MainWindow(controller, settings, overlay=overlay, list_sources=lambda: list_sources(sd))
    win.show()

Everything the window needs is injected: the ``SessionController`` (which owns capture, worker
and transcript writer), the ``Settings`` object it edits in place (``settings_changed`` asks the
app to save), a source lister and a ``ModelStore``. Errors are shown in a banner, never in modal
dialogs, so a failure never blocks the captions. GUI thread only.

Choosing a model asks the controller to load it in the background (``prepare_model``); when its
``ModelInfo`` arrives the latency control offers that model's latencies and the language picker
its languages (hidden for a model that recognises the language itself), with the values remembered
for that model, and Start is enabled. Both apply live during a session.

The window wires parts that live in their own files: the model row (``model_picker``), the level
meters (``source_meters``), Help and About (``help_menu``), "Export last session…"
(``export_button``) and the banner lines for sources lost during a session (``lost_devices``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, QUrl, Signal
from PySide6.QtGui import QDesktopServices, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from captionist import paths
from captionist.alerts.keyword_alerts import KeywordAlerts
from captionist.audio.bounded_call import stuck_for
from captionist.audio.devices import Source, system_audio_note
from captionist.audio.saved_sources import match_saved_sources
from captionist.autostart import LoginItem
from captionist.backend_guard import BackendGuard
from captionist.feed.caption_feed import CaptionFeed
from captionist.models import ModelStore
from captionist.models.info import ModelInfo
from captionist.pipeline.controller import SessionConfig, SessionController, SessionResult
from captionist.pipeline.events import CaptionUpdate, WorkerStats
from captionist.pipeline.session_state import SessionState
from captionist.pipeline.signals import emit
from captionist.settings import Settings
from captionist.ui.about_dialog import AboutDialog, AboutFacts
from captionist.ui.banner import Banner, BannerKind, Problem
from captionist.ui.caption_reader import CaptionReader
from captionist.ui.export_button import ExportButton
from captionist.ui.global_shortcuts import GlobalShortcuts
from captionist.ui.help_menu import HelpMenu
from captionist.ui.lag_indicator import LagIndicator
from captionist.ui.language_picker import LanguagePicker
from captionist.ui.latency_control import LatencyControl
from captionist.ui.level_preview import LevelPreview
from captionist.ui.lost_devices import LostDevices
from captionist.ui.model_picker import ModelPicker
from captionist.ui.models_dialog import ModelsDialog
from captionist.ui.overlay import CLICK_THROUGH_SHORTCUT, CaptionOverlay
from captionist.ui.preferences import Preferences
from captionist.ui.source_meters import SourceMeters
from captionist.ui.source_panel import SourcePanel
from captionist.ui.transcript_notices import TranscriptNotices
from captionist.ui.transcript_view import TranscriptView


def list_devices() -> list[Any]:
    """The engine's compute devices (imported here so the window opens without a built engine)."""
    from captionist.engine import compute_devices

    return list(compute_devices())


class MainWindow(QMainWindow):
    settings_changed = Signal()
    overlay_toggled = Signal(bool)

    def __init__(
        self,
        controller: SessionController,
        settings: Settings,
        *,
        overlay: CaptionOverlay | None = None,
        list_sources: Callable[[], list[Source]] = list,
        model_store: ModelStore | None = None,
        preview: LevelPreview | None = None,
        shortcuts: GlobalShortcuts | None = None,
        login_item: LoginItem | None = None,
        feed: CaptionFeed | None = None,
        alerts: KeywordAlerts | None = None,
        open_url: Callable[[QUrl], bool] = QDesktopServices.openUrl,
        backend_guard: BackendGuard | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Captionist")
        self.controller, self.settings, self.overlay = controller, settings, overlay
        self._list_sources = list_sources
        self.store = model_store or ModelStore()
        self.shortcuts = shortcuts  # global shortcuts, for Preferences (the app wires their actions)
        self.login_item = login_item  # start at login, for Preferences (None: not offered)
        self.feed, self.alerts = feed, alerts  # the caption feed and keyword alerts, for Preferences
        self.backend_guard = backend_guard  # GPU backends off since they crashed, for Preferences

        self.sources = SourcePanel(system_audio_note())
        refresh = QPushButton("Refresh sources")
        self.models = ModelPicker(self.store)
        self.model_combo = self.models.combo
        self.latency = LatencyControl()
        self.language = LanguagePicker()
        self.model_info: ModelInfo | None = None  # of the selected model, once loaded
        self.start_button = QPushButton("Start")
        self.start_button.setObjectName("startButton")
        self.error_banner = Banner(BannerKind.ERROR)
        self.info_banner = Banner(BannerKind.INFO)
        self._lost_devices = LostDevices()
        self.transcript = TranscriptView()
        self.transcript.zoom.set_size(settings.transcript_text_pt)
        self.transcript.zoom.changed.connect(self._on_text_size)
        # for a screen reader or a braille display, where the user turned it on (Preferences)
        self.caption_reader = CaptionReader(self.transcript.text, lambda: settings.screen_reader_captions)
        prefs_button = QPushButton("Preferences…")
        self.help_button = HelpMenu(
            lambda: AboutFacts.gather(self.settings, self.model_info, devices=list_devices),
            self.show_notice,
            open_url,  # how Help opens its page (QDesktopServices; tests record it)
        )
        self.export_button = ExportButton(self.show_error, lambda m: self.statusBar().showMessage(m, 15000))
        self.preferences: Preferences | None = None

        left = QWidget()
        left_layout = QVBoxLayout(left)
        left_layout.addWidget(self.sources, 1)
        left_layout.addWidget(refresh)
        controls = QHBoxLayout()
        controls.addWidget(self.latency, 1)
        controls.addWidget(self.language)
        controls.addWidget(self.start_button)
        right = QWidget()
        right_layout = QVBoxLayout(right)
        right_layout.addWidget(self.models)
        right_layout.addLayout(controls)
        right_layout.addWidget(self.error_banner)
        right_layout.addWidget(self.info_banner)
        right_layout.addWidget(self.transcript, 1)
        bottom = QHBoxLayout()
        bottom.addWidget(prefs_button)
        bottom.addWidget(self.help_button)
        bottom.addStretch(1)
        bottom.addWidget(self.export_button)
        right_layout.addLayout(bottom)
        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(left)
        splitter.addWidget(right)
        splitter.setStretchFactor(1, 3)
        self.setCentralWidget(splitter)

        self.backend_label, self.rtf_label, self.lag_label = (
            QLabel("backend: —"),
            QLabel("RTF —"),
            LagIndicator(),
        )
        for label in (self.backend_label, self.rtf_label, self.lag_label):
            self.statusBar().addPermanentWidget(label)

        refresh.clicked.connect(self.refresh_sources)
        prefs_button.clicked.connect(self.open_preferences)
        prefs_button.setEnabled(overlay is not None)
        self.models.chosen.connect(self._on_model_chosen)
        self.models.empty.connect(self._on_no_model)
        self.models.missing.connect(self._on_model_missing)
        self.models.imported.connect(self._on_imported)
        self.models.failed.connect(self.show_error)
        self.models.models_changed.connect(self.refresh_models)
        self.sources.selection_changed.connect(self._on_sources_chosen)
        self.latency.latency_changed.connect(self._on_latency)
        self.language.language_changed.connect(self._on_language)
        self.start_button.clicked.connect(self.toggle_session)
        controller.model_ready.connect(self._on_model_ready)
        controller.model_failed.connect(self._on_model_failed)
        controller.caption.connect(self._on_caption)
        controller.stats.connect(self._on_stats)
        controller.notice.connect(self._on_controller_notice)
        controller.error.connect(self._on_session_error)
        controller.state_changed.connect(self._on_state)
        controller.session_finished.connect(self._on_finished)
        self._transcript_notices = TranscriptNotices(self.info_banner)
        controller.folder_fallback.connect(self._transcript_notices.folder_fallback)
        controller.transcript_unsaved.connect(self._transcript_notices.unsaved)
        self.click_through_shortcut: QShortcut | None = None  # in Captionist's windows only
        if overlay is not None:
            shortcut = QShortcut(QKeySequence(CLICK_THROUGH_SHORTCUT), self)
            shortcut.setContext(Qt.ShortcutContext.ApplicationShortcut)
            shortcut.activated.connect(lambda: overlay.set_click_through(not overlay.is_click_through()))
            self.click_through_shortcut = shortcut
        self.meters = SourceMeters(
            self.sources,
            preview,
            controller.levels,
            lambda: controller.state is SessionState.IDLE,
            self.show_notice,
            parent=self,
        )
        self.refresh_sources()
        self.refresh_models()
        self.resize(980, 620)

    # --- sources and models -------------------------------------------------------------------
    def refresh_sources(self) -> None:
        try:
            sources = self._list_sources()
        except Exception as exc:  # AudioUnavailable and PortAudio errors: show, keep running
            # the reason now: a sound system that was not answering may have failed since
            self.error_banner.show_only(str(exc), Problem.AUDIO)
            sources = []
        else:
            self.error_banner.resolve(Problem.AUDIO)
        found = match_saved_sources(sources, self.settings.sources, self.settings.source_names)
        self.sources.set_sources(sources, found.ids)
        self._say_missing_sources(found.missing, instead=not found.ids)
        self.meters.restart()

    def sound_system_answers(self) -> None:
        """A sound server that did not answer does again (``SoundSystemWatch``): what gave up on it
        tries again. A Start that failed on it has its line withdrawn; while idle the sources are
        listed again and the level meters reopen, as Refresh sources would."""
        self.error_banner.resolve(Problem.SOUND_SERVER)
        if self.controller.state is SessionState.IDLE:
            self.refresh_sources()

    def refresh_models(self) -> None:
        """List the installed models again, keeping the one in the settings selected."""
        self.models.refresh(Path(self.settings.model_path) if self.settings.model_path else None)

    def open_models(self) -> ModelsDialog:
        return self.models.open_models()

    def selected_model(self) -> Path | None:
        return self.models.selected()

    def import_model(self, path: Path) -> bool:
        return self.models.import_model(path)

    def _on_imported(self, path: Path) -> None:
        self.settings.model_path = str(path)
        emit(self.settings_changed)
        self.error_banner.resolve(Problem.GENERAL)
        self.info_banner.resolve(Problem.MISSING_MODEL)

    def _on_no_model(self) -> None:
        self._set_model_info(None, "no model")
        self.show_error(
            "No speech model yet: open Models… to download one, or import a GGUF file you already have.",
            Problem.NO_MODEL,
        )

    def _on_model_missing(self, gone: Path) -> None:
        """Say which model replaced the one chosen before (the user may have moved or deleted it,
        or it is on a drive that is not plugged in: it would be chosen again from the picker)."""
        self.info_banner.show_message(
            f"The model chosen before, {gone.name}, is not there any more ({gone.parent}); "
            f"“{self.models.combo.currentText()}” is selected instead.",
            Problem.MISSING_MODEL,
        )

    def _on_model_chosen(self, model: Path) -> None:
        self.error_banner.resolve(Problem.NO_MODEL)
        if str(model) != self.settings.model_path:
            self.settings.model_path = str(model)
            emit(self.settings_changed)
        if self.model_info is None or self.model_info.path != model:
            self.error_banner.resolve(Problem.MODEL)  # about the model chosen before
            self._set_model_info(None, "loading…")
            self.controller.prepare_model(model, self.settings.backend)

    def _on_backend_changed(self, backend: str) -> None:
        """Reload the chosen model on the new device now, unless a session is using it."""
        model = self.selected_model()
        if model is None or self.controller.state != SessionState.IDLE:
            return
        self.error_banner.resolve(Problem.MODEL)
        self._set_model_info(None, "loading…")
        self.controller.prepare_model(model, backend)

    def _set_model_info(self, info: ModelInfo | None, why: str = "") -> None:
        """Offer ``info``'s latencies and languages (None: nothing to offer yet, ``why``)."""
        self.model_info = info
        if info is None:
            self.latency.clear(why)
            self.language.set_choices([], None)
        else:
            self.latency.set_choices(info.latencies_ms, self.settings.latency_for(info))
            self.language.set_choices(info.language_choices, self.settings.language_for(info))
        self.start_button.setEnabled(self.controller.state == SessionState.RUNNING or info is not None)

    def _on_model_ready(self, info: ModelInfo) -> None:
        if info.path == self.selected_model() and self.controller.state == SessionState.IDLE:
            self._set_model_info(info)
            self.error_banner.resolve(Problem.MODEL)

    def _on_model_failed(self, path: str, message: str) -> None:
        if Path(path) == self.selected_model():
            self._set_model_info(None, "unusable")
            self.show_error(f"cannot use the model {Path(path).name}: {message}", Problem.MODEL)

    def _say_missing_sources(self, missing: list[str], instead: bool) -> None:
        """Say which sources ticked last time are not connected (and, where none of them is, what is
        ticked instead), so that captions never come from another device without a word."""
        self.info_banner.resolve(Problem.MISSING_SOURCES)  # what an earlier listing said
        if not missing:
            return
        quoted = [f"‘{name}’" for name in missing]
        names = quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]
        several = len(missing) > 1
        text = f"The audio source{'s' if several else ''} chosen before, {names}, "
        text += f"{'are' if several else 'is'} not connected"
        ticked = [s.label() for s in self.sources.selected()]
        if instead and ticked:
            text += f"; ‘{ticked[0]}’ is ticked instead"
        text += f". Plug {'them' if several else 'it'} in and press Refresh sources, or tick another."
        self.info_banner.show_message(text, Problem.MISSING_SOURCES)

    def _on_sources_chosen(self) -> None:
        self.info_banner.resolve(Problem.MISSING_SOURCES)  # the user chose
        chosen = self.sources.selected()
        self.settings.sources = [s.id for s in chosen]
        self.settings.source_names = {s.id: s.name for s in chosen}
        if self.settings.sources:
            self.error_banner.resolve(Problem.SOURCES)
        emit(self.settings_changed)
        self.meters.restart()

    def _on_latency(self, latency_ms: int) -> None:
        if self.model_info is not None:
            self.settings.remember_latency(self.model_info, latency_ms)
            emit(self.settings_changed)
        self.controller.set_latency(latency_ms)

    def _on_language(self, language: str) -> None:
        if self.model_info is not None:
            self.settings.remember_language(self.model_info, language)
            emit(self.settings_changed)
        self.controller.set_language(language)

    # --- session ------------------------------------------------------------------------------
    def toggle_session(self) -> None:
        if self.controller.state == SessionState.RUNNING:
            self.controller.stop()
        elif self.controller.state == SessionState.IDLE:
            self.start_session()

    def start_session(self) -> bool:
        model = self.selected_model()
        if model is None:
            self.show_error("Choose a model first (Import GGUF…).", Problem.NO_MODEL)
            return False
        info = self.model_info
        if info is None or info.path != model:
            self.show_error("The model is still loading; press Start again in a moment.", Problem.MODEL)
            return False
        sources = self.sources.selected()
        if not sources:
            self.show_error("Tick at least one audio source.", Problem.SOURCES)
            return False
        s = self.settings
        config = SessionConfig(
            model,
            sources,
            self.latency.value_ms() or info.default_latency_ms,
            s.transcript_folder(),
            s.transcript_format,
            s.transcript_timestamps,
            s.backend,
            s.silence_warning_s,
            language=self.language.language(),
            token_ms=info.token_ms,
            fallback_folder=paths.default_transcript_dir(),
        )
        self.error_banner.resolve(Problem.GENERAL, Problem.SESSION, Problem.SOUND_SERVER, Problem.DEVICE)
        self._transcript_notices.session_starting()
        if self.overlay is not None:
            self.overlay.clear()
        self.transcript.begin_session(" + ".join(src.name for src in sources))
        self.meters.session_starting()  # the session opens the devices itself
        started = self.controller.start(config)
        if not started:
            self.meters.restart()
        return started

    def _on_state(self, state: SessionState) -> None:
        labels = {SessionState.RUNNING: "Stop", SessionState.STOPPING: "Finishing…"}
        self.start_button.setText(labels.get(state, "Start"))
        idle_and_ready = state is SessionState.IDLE and self.model_info is not None
        self.start_button.setEnabled(state is SessionState.RUNNING or idle_and_ready)
        self.sources.setEnabled(state is SessionState.IDLE)
        self.model_combo.setEnabled(state is SessionState.IDLE)
        if state is SessionState.RUNNING:
            self.meters.session_running()
            self.lag_label.session_started()
        elif state is SessionState.IDLE:
            self._lost_devices.clear()  # nothing is captured now, so nothing waits for them
            self.error_banner.resolve(Problem.DEVICE)
            self.meters.session_idle()

    def _on_text_size(self, pt: float) -> None:
        self.settings.transcript_text_pt = pt
        emit(self.settings_changed)

    def _on_caption(self, update: CaptionUpdate) -> None:
        self.transcript.append_update(update)
        self.caption_reader.add(update)
        if self.overlay is not None:
            self.overlay.show_update(update)

    def _on_stats(self, stats: WorkerStats) -> None:
        self.backend_label.setText(f"backend: {stats.backend}")
        self.rtf_label.setText(f"RTF {stats.rtf:.2f}")
        self.lag_label.show_stats(stats)  # the true lag, with a warning before audio is skipped

    def _on_finished(self, result: SessionResult) -> None:
        if result.transcript is not None:
            self.export_button.set_transcript(result.transcript)
            self.statusBar().showMessage(f"Transcript saved to {result.transcript}", 15000)

    @property
    def last_transcript(self) -> Path | None:
        return self.export_button.transcript

    def export_last(self, dest: Path) -> bool:
        """Write the last session's transcript again, in the format ``dest``'s suffix names."""
        return self.export_button.export(dest)

    def open_preferences(self) -> Preferences | None:
        if self.overlay is None:
            return None
        if self.preferences is None:
            self.preferences = Preferences(
                self.settings,
                self.overlay,
                parent=self,
                devices=list_devices,
                shortcuts=self.shortcuts,
                login_item=self.login_item,
                feed=self.feed,
                alerts=self.alerts,
                backend_guard=self.backend_guard,
            )
            self.preferences.settings_changed.connect(self.settings_changed)
            self.preferences.backend_changed.connect(self._on_backend_changed)
        self.preferences.show()
        return self.preferences

    def show_about(self) -> AboutDialog:
        """The About dialog (non-modal): the model it names is the one loaded now."""
        return self.help_button.show_about()

    def open_help(self) -> QUrl | None:
        return self.help_button.open_help()

    # --- messages -----------------------------------------------------------------------------
    def show_error(self, message: str, problem: Problem = Problem.GENERAL) -> None:
        """Show ``message`` in the red banner until ``problem`` ends or the user dismisses it;
        distinct messages stack (newest last, at most three)."""
        self.error_banner.show_message(message, problem)

    def _on_session_error(self, message: str) -> None:
        # a call into the sound server is still waiting past its limit (a Start that could not open
        # a source because the server hangs): the line goes by itself once the server answers
        self.show_error(message, Problem.SOUND_SERVER if stuck_for() is not None else Problem.SESSION)

    def clear_error(self) -> None:
        self.error_banner.clear()

    def show_notice(self, message: str) -> None:
        self.statusBar().showMessage(message, 10000)

    def show_recovery_notice(self, text: str, session_path: Path | None) -> None:
        """Say what was recovered after a crash (a dismissable info banner) and offer "Export last
        session…" for ``session_path`` (None: nothing to export)."""
        self.info_banner.show_message(text, Problem.RECOVERY)
        if session_path is not None:
            self.export_button.set_transcript(session_path)

    def _on_controller_notice(self, message: str) -> None:
        """Notices go to the status bar; a source lost during a session also shows in the banner
        until it is back (or the session ends)."""
        self.show_notice(message)
        change = self._lost_devices.on_notice(message)
        if change.show is not None:
            self.show_error(change.show, Problem.DEVICE)
        if change.withdraw is not None:
            self.error_banner.withdraw(change.withdraw)
