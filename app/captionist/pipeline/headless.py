"""Headless live captioning: ``captionist live`` (same controller, worker and writer as the GUI).

Usage::

    from captionist.pipeline.headless import run_live
    status = run_live(model=None, device="pulse", latency_ms=560, output=Path("meeting.srt"),
                      duration=60.0, backend="auto", language=None)

The model is loaded before the session starts, so a latency or language it does not offer is a
one-line ``ValueError`` naming its choices before any device opens. Without ``latency_ms``/``language`` the
values remembered for this model in the settings are used, else the model's defaults;
``delay_ms`` is Voxtral's name for ``latency_ms``.
Captions are printed to stdout as they are committed (a line break at each end of utterance);
notices and errors go to stderr. The session's crash-safe transcript is written continuously into
the output's folder (``<start time>.<fmt>`` plus its journal); when the session ends it is exported
to ``output`` itself. Without ``output`` the transcript goes to the settings' folder and format.
Ctrl-C (or the duration) stops capture; audio already captured is still transcribed.
Setup problems raise ``ValueError``/``DeviceNotFound``/``AudioUnavailable`` with one-line messages.
Returns 0, or 1 when the session failed.
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import Any, TextIO

from PySide6.QtCore import QCoreApplication, QObject, QTimer, Slot

from captionist.audio.devices import find_source, import_sounddevice, list_sources
from captionist.models import default_model_path
from captionist.models.info import ModelInfo
from captionist.pipeline.controller import (
    ModelLoader,
    SessionConfig,
    SessionController,
    SessionResult,
    load_engine_model,
)
from captionist.pipeline.events import CaptionUpdate
from captionist.settings import load_settings
from captionist.transcript import SessionWriter, check_format


class CaptionPrinter(QObject):
    """Prints committed text as it arrives; collects the session result."""

    def __init__(self, out: TextIO, err: TextIO) -> None:
        super().__init__()
        self.out, self.err = out, err
        self.result: SessionResult | None = None
        self._line_open = False

    @Slot(object)
    def on_caption(self, update: CaptionUpdate) -> None:
        for i, part in enumerate(update.new_lines()):
            if i and self._line_open:  # an end of utterance: the next words start a new line
                self.out.write("\n")
                self._line_open = False
            text = part if self._line_open else part.lstrip()
            if text:
                self.out.write(text)
                self._line_open = True
        if self._line_open and update.final:
            self.out.write("\n")
            self._line_open = False
        self.out.flush()

    @Slot(str)
    def on_message(self, message: str) -> None:
        if self._line_open:
            self.out.write("\n")
            self.out.flush()
            self._line_open = False
        print(f"captionist: {message}", file=self.err, flush=True)

    @Slot(object)
    def on_finished(self, result: SessionResult) -> None:
        self.result = result
        QCoreApplication.quit()


def run_live(
    model: str | None,
    device: str | None,
    latency_ms: int | None,
    output: Path | None,
    duration: float | None,
    backend: str = "auto",
    *,
    language: str | None = None,
    delay_ms: int | None = None,
    sd: Any = None,
    model_loader: ModelLoader | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    out, err = out or sys.stdout, err or sys.stderr
    settings = load_settings().settings
    model_path = Path(model) if model else default_model_path()
    if model_path is None:
        raise ValueError("no model: pass --model FILE.gguf (or choose one in the desktop app first)")
    if not model_path.is_file():
        raise ValueError(f"model file not found: {model_path}")
    if duration is not None and duration <= 0:
        raise ValueError(f"duration must be > 0 seconds; got {duration}")
    if output is not None:
        output = Path(output)
        fmt = check_format(output.suffix.lstrip(".").lower() or "txt")
        folder = output.parent if str(output.parent) else Path(".")
    else:
        fmt, folder = check_format(settings.transcript_format), settings.transcript_folder()
    sd = sd or import_sounddevice()
    source = find_source(device, list_sources(sd))
    loaded = (model_loader or load_engine_model)(model_path, backend)
    info = ModelInfo.of(loaded, model_path)
    if latency_ms is None and delay_ms is None:
        latency = settings.latency_for(info)
    else:
        latency = loaded.resolve_latency(latency_ms, delay_ms)  # ValueError naming the choices
    chosen = settings.language_for(info) if language is None else loaded.resolve_language(language)

    app = QCoreApplication.instance() or QCoreApplication([])
    ctl = SessionController(sd=sd, model_loader=lambda path, backend: loaded)
    printer = CaptionPrinter(out, err)
    ctl.caption.connect(printer.on_caption)
    ctl.notice.connect(printer.on_message)
    ctl.error.connect(printer.on_message)
    ctl.session_finished.connect(printer.on_finished)
    config = SessionConfig(
        model_path,
        [source],
        latency,
        folder,
        fmt,
        settings.transcript_timestamps,
        backend,
        language=chosen or None,
        token_ms=info.token_ms,
    )
    settings_text = f"latency {latency} ms" + (f", language {chosen}" if chosen else "")
    print(
        f"captionist: listening to {source.label()} ({settings_text}); Ctrl-C to stop", file=err, flush=True
    )
    if not ctl.start(config):
        return 1
    previous = signal.signal(signal.SIGINT, lambda *_: ctl.stop())
    wake = QTimer()  # lets Python run its signal handler while Qt's loop waits
    wake.timeout.connect(lambda: None)
    wake.start(100)
    if duration is not None:
        QTimer.singleShot(int(duration * 1000), ctl.stop)
    try:
        if printer.result is None:
            app.exec()
    finally:
        signal.signal(signal.SIGINT, previous)
        wake.stop()
    result = printer.result
    if result is None:  # the loop was quit by someone else
        ctl.stop()
        ctl.wait_idle()
        return 1
    if result.transcript is not None:
        final = result.transcript
        if output is not None and output.resolve() != result.transcript.resolve():
            SessionWriter.export(result.transcript, output, fmt)
            final = output
        print(f"captionist: transcript written to {final}", file=err, flush=True)
    return 1 if result.summary.error else 0
