"""Session controller: wires capture, worker thread and transcript writer for one session at a time.

Usage (GUI thread, or a QCoreApplication in headless mode)::

    ctl = SessionController(sd=sounddevice)
    ctl.model_ready.connect(window.on_model_ready)       # ModelInfo
    ctl.prepare_model(model_path, "auto")                 # load in the background, cached
    ctl.caption.connect(overlay.show_update)
    ctl.start(SessionConfig(model_path, [source], latency_ms=560, folder=Path("/media/usb/Notes"),
                            token_ms=info.token_ms, language=None,
                            fallback_folder=paths.default_transcript_dir()))   # if usb is not there
    ctl.set_latency(160)        # applied live
    ctl.set_language("de")      # models with a language choice
    ctl.stop()                  # drains queued audio; session_finished fires when done

The three channels of STYLE rule 8 meet here: the capture's queue carries audio into the worker,
``WorkerControl`` carries stop, latency and language changes, and the worker's signals arrive here
queued onto this object's thread. Each update goes to the ``TranscriptSaver``, which writes it (with
its ends of utterance, or the gap where the worker had to drop audio) on a thread of its own, and is
passed on once it is on disk (``CaptionHold``): the captions shown are in the file, and a crash
loses none of them. A disk that takes longer than ``save_wait_s`` does not hold them back any
longer; ``transcript_unsaved`` then says how far the file is behind (a hung network share delays
the file, never the captions). The lag is read from the capture's and the worker's sample counts
(``captionist.pipeline.lag.LagMeter``) on this thread, by a timer, so the ``stats`` it sends keep
moving while the worker is blocked in the engine; captions held for the disk count in it, as they
are not shown yet. Models are loaded once and cached: ``prepare_model`` loads one on a background
thread and reports its ``ModelInfo`` (what the UI needs to offer its latencies and languages), and
a session with the same model reuses it.
A transcript folder that cannot be written, at the start or during the session, sends the session
to ``fallback_folder`` (to close it, to the temporary folder as a last resort), reported by
``folder_fallback`` (``pipeline.transcript_target``); when no folder takes it, ``error`` says so and
the captions go on without a file. The folder used is remembered for crash recovery
(``transcript.folders``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from PySide6.QtCore import QCoreApplication, QObject, Qt, QThread, QTimer, Signal, Slot

from captionist.audio.capture import Capture, CaptureError
from captionist.audio.devices import Source, list_sources, rediscover
from captionist.models.info import ModelInfo
from captionist.pipeline.caption_hold import CaptionHold
from captionist.pipeline.disk_thread import HANG_S
from captionist.pipeline.events import CaptionUpdate, SessionSummary, WorkerStats
from captionist.pipeline.lag import LagMeter
from captionist.pipeline.session_state import SessionState
from captionist.pipeline.signals import emit
from captionist.pipeline.transcript_saver import SaverResult, TranscriptSaver
from captionist.pipeline.transcript_target import open_transcript
from captionist.pipeline.worker import InferenceWorker, LoadPolicy, WorkerControl
from captionist.transcript import SessionWriter, check_format

ModelLoader = Callable[[Path, str], Any]


def load_engine_model(path: Path, backend: str) -> Any:
    """The real engine model (imported lazily so the app starts without a built engine), with the
    repack cache in the user's cache folder."""
    from captionist import paths
    from captionist.engine import Model

    return Model(str(path), backend=backend, repack_cache=paths.repack_cache_dir())


@dataclass(frozen=True)
class SessionConfig:
    """One session: ``latency_ms`` and ``language`` (None: the model's default) must be the model's
    choices; ``token_ms`` is the model's token duration (``ModelInfo.token_ms``), for the transcript."""

    model_path: Path
    sources: list[Source]
    latency_ms: int
    folder: Path | None  # None: no transcript file
    fmt: str = "txt"
    timestamps: bool = True
    backend: str = "auto"
    silence_warning_s: float = 10.0
    language: str | None = None
    token_ms: int = field(kw_only=True)
    fallback_folder: Path | None = field(default=None, kw_only=True)  # if ``folder`` cannot be written

    def transcript_meta(self) -> dict[str, Any]:
        """What a transcript file says of the session: its model file and its sources."""
        return {"model": self.model_path.name, "sources": [s.name for s in self.sources]}


@dataclass(frozen=True)
class SessionResult:
    summary: SessionSummary
    transcript: Path | None  # None: nothing was said (no file is made), or it could not be written
    write_error: str | None = None  # why the transcript could not be written


class SessionController(QObject):
    model_ready = Signal(object)  # ModelInfo of a model prepare_model() loaded
    model_failed = Signal(str, str)  # path, why it could not be loaded
    caption = Signal(object)  # CaptionUpdate
    stats = Signal(object)  # WorkerStats, its lag read live from the sample counts
    notice = Signal(str)
    error = Signal(str)
    state_changed = Signal(object)  # SessionState
    session_started = Signal(object)  # SessionConfig of a session that started (before its captions)
    folder_fallback = Signal(object)  # FolderFallback: the transcript's folder failed, another is used
    transcript_unsaved = Signal(float)  # seconds the file is behind the captions; 0.0: caught up
    session_finished = Signal(object)  # SessionResult

    def __init__(
        self,
        *,
        sd: Any = None,
        model_loader: ModelLoader = load_engine_model,
        capture_factory: Callable[[list[Source]], Capture] | None = None,
        writer_factory: Callable[..., Any] = SessionWriter,
        policy: LoadPolicy | None = None,
        save_wait_s: float = 0.5,
        hang_s: float = HANG_S,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self._sd = sd
        self._loader = model_loader
        self._capture_factory = capture_factory or self._default_capture
        self._writer_factory = writer_factory
        self._policy = policy
        self._model_lock = threading.Lock()
        self._prepare_lock = threading.Lock()  # serves prepare_model requests one at a time
        self._preparing: list[threading.Thread] = []
        self._model_key: tuple[str, str] | None = None
        self._model: Any = None
        self._state = SessionState.IDLE
        self._capture: Capture | None = None
        self._thread: QThread | None = None
        self._worker: InferenceWorker | None = None
        self._control: WorkerControl | None = None
        self._saver: TranscriptSaver | None = None
        self._save_wait_s, self._hang_s = save_wait_s, hang_s
        self._hold: CaptionHold | None = None
        self._summary: SessionSummary | None = None  # of a finished worker, until the saver has closed
        self._config: SessionConfig | None = None
        self._silence_warned: set[str] = set()
        self._silence_timer = QTimer(self)
        self._silence_timer.setInterval(1000)
        self._silence_timer.timeout.connect(self._check_silence)
        self._meter: LagMeter | None = None
        self._last_stats: WorkerStats | None = None
        self._lag_timer = QTimer(self)
        self._lag_timer.setInterval(250)
        self._lag_timer.timeout.connect(self._report_lag)

    # --- queries -------------------------------------------------------------------------------
    @property
    def state(self) -> SessionState:
        return self._state

    @property
    def transcript_path(self) -> Path | None:
        """The file the session writes (None: none yet, or no transcript)."""
        return self._saver.path if self._saver is not None else None

    def levels(self) -> dict[str, float]:
        return self._capture.levels() if self._capture is not None else {}

    def _set_state(self, state: SessionState) -> None:
        self._state = state
        emit(self.state_changed, state)

    # --- wiring --------------------------------------------------------------------------------
    def _default_capture(self, sources: list[Source]) -> Capture:
        sd = self._sd

        def resolver(lost: Source) -> Source | None:
            try:
                return rediscover(lost, list_sources(sd))
            except Exception:  # the audio system itself may be restarting
                return None

        return Capture(sources, sd=sd, resolver=resolver)

    def _load(self, path: Path, backend: str) -> Any:
        """Load (or reuse) a model; any thread. One model is kept: loading another frees it first."""
        key = (str(path), backend)
        with self._model_lock:
            if self._model_key != key:
                self._model, self._model_key = None, None
                self._model = self._loader(path, backend)
                self._model_key = key
            return self._model

    def _provide_model(self) -> Any:
        """Runs on the worker thread: the configured model."""
        cfg = self._config
        assert cfg is not None
        return self._load(cfg.model_path, cfg.backend)

    def prepare_model(self, path: Path, backend: str = "auto") -> None:
        """Load ``path`` on a background thread and emit ``model_ready`` with its ``ModelInfo``
        (``info.path`` is ``path``), or ``model_failed(path, message)``. The model stays cached for
        the next session. Requests made while one loads are served in order, each one reported."""
        thread = threading.Thread(
            target=self._prepare, args=(Path(path), backend), name="captionist-model-load", daemon=True
        )
        self._preparing.append(thread)
        thread.start()

    def _prepare(self, path: Path, backend: str) -> None:
        try:
            with self._prepare_lock:
                info = ModelInfo.of(self._load(path, backend), path)
        except Exception as exc:  # thread boundary: every failure is reported
            emit(self.model_failed, str(path), " ".join(str(exc).split()) or type(exc).__name__)
        else:
            emit(self.model_ready, info)

    def wait_prepared(self, timeout_s: float = 30.0) -> bool:
        """Block until every ``prepare_model`` request has been served (at exit, in tests)."""
        for thread in list(self._preparing):
            thread.join(timeout_s)
        self._preparing = [t for t in self._preparing if t.is_alive()]
        return not self._preparing

    def start(self, config: SessionConfig) -> bool:
        """Open the sources and start a session; on failure emit ``error`` and return False."""
        if self._state != SessionState.IDLE:
            emit(self.error, "a session is already running")
            return False
        if not config.sources:
            emit(self.error, "no audio source selected")
            return False
        try:
            check_format(config.fmt)
        except ValueError as exc:
            emit(self.error, f"cannot write the transcript: {exc}")
            return False
        self._config = config
        try:
            capture = self._capture_factory(config.sources)
            capture.start()
        except (CaptureError, OSError, ValueError) as exc:
            emit(self.error, str(exc))
            return False
        self._capture, self._saver = capture, self._new_saver(config)
        self._control = WorkerControl()
        self._worker = InferenceWorker(
            self._provide_model,
            capture,
            self._control,
            config.latency_ms,
            self._policy,
            language=config.language,
        )
        worker = self._worker
        captured = getattr(capture, "captured_samples", None) or (lambda: worker.ledger.received)
        hold = self._hold = CaptionHold(self._save_wait_s, parent=self)
        hold.show.connect(self._on_shown)
        hold.unsaved.connect(self._on_unsaved)
        if self._saver is not None:
            self._saver.saved.connect(hold.saved)
        self._meter = LagMeter(
            self._policy or LoadPolicy(), captured, lambda: worker.ledger, hold.shown_through
        )
        self._summary = None
        self._last_stats = WorkerStats(
            backend="?",
            rtf=0.0,
            lag_ms=0,
            dropped_ms=0,
            audio_ms=0,
            latency_ms=config.latency_ms,
            language=config.language,
            chosen_latency_ms=config.latency_ms,
        )
        self._thread = QThread()
        self._worker.moveToThread(self._thread)
        self._thread.started.connect(self._worker.run)
        self._worker.caption.connect(self._on_caption)
        self._worker.stats.connect(self._on_stats)
        self._worker.notice.connect(self._on_notice)
        self._worker.error.connect(self._on_error)
        self._worker.finished.connect(self._on_finished)
        # Direct: QThread.quit is thread-safe, and a queued quit could not arrive while shutdown() waits.
        self._worker.finished.connect(self._thread.quit, Qt.ConnectionType.DirectConnection)
        self._silence_warned.clear()
        self._silence_timer.start()
        self._lag_timer.start()
        self._set_state(SessionState.RUNNING)
        emit(self.session_started, config)
        if self._saver is not None:
            self._saver.start()
        self._thread.start()
        return True

    def _new_saver(self, config: SessionConfig) -> TranscriptSaver | None:
        """The saver of ``config``'s transcript (None: no file); it opens the file on its thread."""
        folder = config.folder
        if folder is None:
            return None
        kwargs = {
            "token_ms": config.token_ms,
            "timestamps": config.timestamps,
            "meta": config.transcript_meta(),
            "started": datetime.now(),  # a writer that takes over later keeps the session's name
        }

        def open_writer() -> tuple[Any, Any]:
            return open_transcript(self._writer_factory, folder, config.fallback_folder, config.fmt, **kwargs)

        def reopen(elsewhere: Path) -> Any:
            return self._writer_factory(elsewhere, config.fmt, **kwargs)

        saver = TranscriptSaver(open_writer, reopen, folder, config.fallback_folder, hang_s=self._hang_s)
        saver.folder_fallback.connect(self._on_folder_fallback)
        saver.failed.connect(self._on_error)
        saver.closed.connect(self._on_saver_closed)
        return saver

    def stop(self) -> None:
        """Close the devices and let the worker finish what was already captured."""
        if self._state != SessionState.RUNNING:
            return
        assert self._capture is not None and self._control is not None
        self._set_state(SessionState.STOPPING)
        self._silence_timer.stop()
        self._capture.stop()
        self._control.stop.set()

    def set_latency(self, latency_ms: int) -> None:
        """Change the latency live (no effect when idle; the next session uses its own config)."""
        if self._control is not None and self._state == SessionState.RUNNING:
            self._control.request_latency(latency_ms)

    def set_language(self, language: str | None) -> None:
        """Change the language live (None: the model's default); no effect when idle."""
        if self._control is not None and self._state == SessionState.RUNNING:
            self._control.request_language(language)

    def wait_idle(self, timeout_ms: int = 10000) -> bool:
        """Block until the worker thread has ended."""
        return self._thread.wait(timeout_ms) if self._thread is not None else True

    def shutdown(self, timeout_ms: int = 30000) -> None:
        """At application exit: stop, let the worker finish the queued audio, close the transcript.

        Blocks the calling (GUI) thread; the worker's queued signals are delivered before returning.
        """
        self.stop()
        if self._thread is not None:
            self._thread.wait(timeout_ms)
            QCoreApplication.sendPostedEvents(self)  # the worker's last updates and its end
        if self._saver is not None:  # closing: wait for the file, then deliver what it reported
            self._saver.join(timeout_ms / 1000)
            QCoreApplication.sendPostedEvents(self)
        self.wait_prepared(timeout_ms / 1000)

    # --- worker signals (queued onto this thread) ---------------------------------------------
    @Slot(object)
    def _on_caption(self, update: CaptionUpdate) -> None:
        """An update from the worker: shown at once without a transcript file, else once it is
        saved or has waited ``save_wait_s`` (``CaptionHold``)."""
        if self._saver is None or self._hold is None:
            emit(self.caption, update)
            return
        decoded = self._worker.ledger.decoded if self._worker is not None else 0
        self._saver.submit(self._hold.arrive(update, decoded), update)

    @Slot(object)
    def _on_shown(self, update: CaptionUpdate) -> None:
        emit(self.caption, update)

    @Slot(float)
    def _on_unsaved(self, seconds: float) -> None:
        emit(self.transcript_unsaved, seconds)

    @Slot(object)
    def _on_folder_fallback(self, fallback: Any) -> None:
        emit(self.folder_fallback, fallback)

    @Slot(object)
    def _on_stats(self, stats: WorkerStats) -> None:
        self._last_stats = stats
        self._report_lag()

    @Slot()
    def _report_lag(self) -> None:
        """Send the latest stats with the lag as the sample counts say now."""
        if self._meter is None or self._last_stats is None:
            return
        lag = self._meter.read()
        emit(
            self.stats,
            replace(
                self._last_stats,
                lag_ms=lag.lag_ms,
                backlog_ms=lag.backlog_ms,
                lag_state=lag.state,
                shed_in_s=lag.shed_in_s,
                dropped_ms=lag.dropped_ms,
                latency_ms=lag.latency_ms,
                chosen_latency_ms=lag.chosen_latency_ms,
            ),
        )

    @Slot(str)
    def _on_notice(self, message: str) -> None:
        emit(self.notice, message)

    @Slot(str)
    def _on_error(self, message: str) -> None:
        emit(self.error, message)

    @Slot(object)
    def _on_finished(self, summary: SessionSummary) -> None:
        """The worker is done: close the transcript (on the saver's thread), then finish."""
        self._silence_timer.stop()
        self._lag_timer.stop()
        self._report_lag()  # the last figures: nothing waits any more
        self._meter, self._last_stats = None, None
        if self._capture is not None and self._capture.running:
            self._capture.stop()  # the worker ended on its own (an error)
        if self._thread is not None:
            self._thread.quit()  # the queued quit from the worker may not have been delivered yet
            self._thread.wait()
        if self._saver is None:
            self._finish(summary, SaverResult(None))
        else:
            self._summary = summary
            self._saver.close()

    @Slot(object)
    def _on_saver_closed(self, result: SaverResult) -> None:
        if self._summary is not None:
            self._finish(self._summary, result)

    def _finish(self, summary: SessionSummary, saved: SaverResult) -> None:
        if self._hold is not None:
            self._hold.release_all()  # all saved by now; nothing is ever left unshown
            self._hold.deleteLater()
        if self._saver is not None:
            self._saver.join()
        self._worker, self._thread, self._control, self._capture = None, None, None, None
        self._saver, self._hold, self._summary = None, None, None
        self._set_state(SessionState.IDLE)
        emit(self.session_finished, SessionResult(summary, saved.path, saved.error))

    @Slot()
    def _check_silence(self) -> None:
        if self._capture is None or self._config is None:
            return
        for src in self._capture.sources:
            silent = self._capture.silent_seconds(src.id) >= self._config.silence_warning_s
            if silent and src.id not in self._silence_warned:
                self._silence_warned.add(src.id)
                emit(
                    self.notice,
                    f"no sound from {src.name!r} for {self._config.silence_warning_s:g} s "
                    "- is it the right source, and is it muted?",
                )
            elif not silent:
                self._silence_warned.discard(src.id)
