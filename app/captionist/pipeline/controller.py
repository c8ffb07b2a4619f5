"""Session controller: wires capture, worker thread and transcript writer for one session at a time.

Usage (GUI thread, or a QCoreApplication in headless mode)::

    ctl = SessionController(sd=sounddevice)
    ctl.caption.connect(overlay.show_update)
    ctl.start(SessionConfig(model_path, [source], delay_ms=480, folder=Path("~/Documents/Captionist")))
    ctl.set_delay(960)          # applied live
    ctl.stop()                  # drains queued audio; session_finished fires when done

The three channels of STYLE rule 8 meet here: the capture's queue carries audio into the worker,
``WorkerControl`` carries stop and delay changes, and the worker's signals arrive here queued onto
this object's thread, where the ``SessionWriter`` (owned by the controller) appends each committed
line before the update is passed on. Models are loaded on the worker thread and cached, so a
restart with the same model is instant.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PySide6.QtCore import QCoreApplication, QObject, Qt, QThread, QTimer, Signal, Slot

from captionist.audio.capture import Capture, CaptureError
from captionist.audio.devices import Source, list_sources, rediscover
from captionist.pipeline.events import CaptionUpdate, SessionSummary, WorkerStats
from captionist.pipeline.signals import emit
from captionist.pipeline.worker import InferenceWorker, LoadPolicy, WorkerControl
from captionist.transcript import SessionWriter

ModelLoader = Callable[[Path, str], Any]


def load_engine_model(path: Path, backend: str) -> Any:
    """The real engine model (imported lazily so the app starts without a built engine)."""
    from captionist.engine import Model

    return Model(str(path), backend=backend)


@dataclass(frozen=True)
class SessionConfig:
    model_path: Path
    sources: list[Source]
    delay_ms: int
    folder: Path | None  # None: no transcript file
    fmt: str = "txt"
    timestamps: bool = True
    backend: str = "auto"
    silence_warning_s: float = 10.0


@dataclass(frozen=True)
class SessionResult:
    summary: SessionSummary
    transcript: Path | None


class SessionController(QObject):
    caption = Signal(object)  # CaptionUpdate
    stats = Signal(object)  # WorkerStats
    notice = Signal(str)
    error = Signal(str)
    state_changed = Signal(str)  # "idle" | "running" | "stopping"
    session_finished = Signal(object)  # SessionResult

    def __init__(
        self,
        *,
        sd: Any = None,
        model_loader: ModelLoader = load_engine_model,
        capture_factory: Callable[[list[Source]], Capture] | None = None,
        writer_factory: Callable[..., Any] = SessionWriter,
        policy: LoadPolicy | None = None,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self._sd = sd
        self._loader = model_loader
        self._capture_factory = capture_factory or self._default_capture
        self._writer_factory = writer_factory
        self._policy = policy
        self._model_lock = threading.Lock()
        self._model_key: tuple[str, str] | None = None
        self._model: Any = None
        self._state = "idle"
        self._capture: Capture | None = None
        self._thread: QThread | None = None
        self._worker: InferenceWorker | None = None
        self._control: WorkerControl | None = None
        self._writer: Any = None
        self._write_failed = False
        self._config: SessionConfig | None = None
        self._silence_warned: set[str] = set()
        self._silence_timer = QTimer(self)
        self._silence_timer.setInterval(1000)
        self._silence_timer.timeout.connect(self._check_silence)

    # --- queries -------------------------------------------------------------------------------
    @property
    def state(self) -> str:
        return self._state

    @property
    def transcript_path(self) -> Path | None:
        return self._writer.path if self._writer is not None else None

    def levels(self) -> dict[str, float]:
        return self._capture.levels() if self._capture is not None else {}

    def _set_state(self, state: str) -> None:
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

    def _provide_model(self) -> Any:
        """Runs on the worker thread: load (or reuse) the configured model."""
        cfg = self._config
        assert cfg is not None
        key = (str(cfg.model_path), cfg.backend)
        with self._model_lock:
            if self._model_key != key:
                self._model = None
                self._model = self._loader(cfg.model_path, cfg.backend)
                self._model_key = key
            return self._model

    def start(self, config: SessionConfig) -> bool:
        """Open the sources and start a session; on failure emit ``error`` and return False."""
        if self._state != "idle":
            emit(self.error, "a session is already running")
            return False
        if not config.sources:
            emit(self.error, "no audio source selected")
            return False
        self._config = config
        try:
            capture = self._capture_factory(config.sources)
            capture.start()
        except (CaptureError, OSError, ValueError) as exc:
            emit(self.error, str(exc))
            return False
        writer = None
        if config.folder is not None:
            try:
                writer = self._writer_factory(
                    config.folder,
                    config.fmt,
                    timestamps=config.timestamps,
                    meta={"model": config.model_path.name, "sources": [s.name for s in config.sources]},
                )
            except (OSError, ValueError) as exc:
                capture.stop()
                emit(self.error, f"cannot write the transcript: {exc}")
                return False
        self._capture, self._writer, self._write_failed = capture, writer, False
        self._control = WorkerControl()
        self._worker = InferenceWorker(
            self._provide_model, capture, self._control, config.delay_ms, self._policy
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
        self._set_state("running")
        self._thread.start()
        return True

    def stop(self) -> None:
        """Close the devices and let the worker finish what was already captured."""
        if self._state != "running":
            return
        assert self._capture is not None and self._control is not None
        self._set_state("stopping")
        self._silence_timer.stop()
        self._capture.stop()
        self._control.stop.set()

    def set_delay(self, delay_ms: int) -> None:
        """Change the delay live (no effect when idle; the next session uses its own config)."""
        if self._control is not None and self._state == "running":
            self._control.request_delay(delay_ms)

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
            QCoreApplication.sendPostedEvents(self)

    # --- worker signals (queued onto this thread) ---------------------------------------------
    @Slot(object)
    def _on_caption(self, update: CaptionUpdate) -> None:
        if self._writer is not None and update.new_tokens:
            try:
                self._writer.add_tokens(update.new_tokens)
            except OSError as exc:
                if not self._write_failed:
                    emit(self.error, str(exc))
                self._write_failed = True
            else:
                self._write_failed = False
        emit(self.caption, update)

    @Slot(object)
    def _on_stats(self, stats: WorkerStats) -> None:
        emit(self.stats, stats)

    @Slot(str)
    def _on_notice(self, message: str) -> None:
        emit(self.notice, message)

    @Slot(str)
    def _on_error(self, message: str) -> None:
        emit(self.error, message)

    @Slot(object)
    def _on_finished(self, summary: SessionSummary) -> None:
        self._silence_timer.stop()
        if self._capture is not None and self._capture.running:
            self._capture.stop()  # the worker ended on its own (an error)
        path = None
        if self._writer is not None:
            try:
                path = self._writer.close()
            except OSError as exc:
                emit(self.error, str(exc))
        if self._thread is not None:
            self._thread.quit()  # the queued quit from the worker may not have been delivered yet
            self._thread.wait()
        self._worker, self._thread, self._control, self._capture, self._writer = None, None, None, None, None
        self._set_state("idle")
        emit(self.session_finished, SessionResult(summary, path))

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
