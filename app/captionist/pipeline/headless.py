"""Headless live captioning: ``captionist live`` (same controller, worker and writer as the GUI).

Usage::

    from captionist.pipeline.headless import run_live
    status = run_live(model=None, device="pulse", latency_ms=560, output=Path("meeting.srt"),
                      duration=60.0, backend="auto", language=None)

``device`` is an id or name part, or a list of them: those sources are mixed (``--device`` given
more than once). The model is loaded before the session starts, so a latency or language it does
not offer is a one-line ``ValueError`` naming its choices before any device opens. Without
``latency_ms``/``language`` the model's own defaults are used (the desktop app's saved settings are
never read here); ``delay_ms`` is Voxtral's name for ``latency_ms``.
Captions are printed to stdout as they are committed (a line break at each end of utterance);
notices and errors go to stderr. The session's crash-safe transcript is written continuously into
the output's folder (``<start time>.<fmt>`` plus its journal); when the session ends it is exported
to ``output`` itself, atomically, and the session's own files are removed, so only ``output``
remains. ``output`` must be a new path or a regular file. Without ``output`` the transcript goes to
``paths.default_transcript_dir()`` as timestamped txt.
Ctrl-C (or the duration) stops capture; audio already captured is still transcribed.

The caption feed (``captionist.feed``): ``serve`` (a ``BindAddress``) serves the caption page,
events and text lines while the session runs, and prints ``serving captions at URL`` as the first
line on stdout; beyond the loopback the URL carries ``serve_token`` or a generated token.
``captions_file`` keeps a text file of the current lines; ``keywords`` are announced on stderr
(and on the feed) when spoken.

Nothing captured is lost to a write failure (a full disk): the committed tokens are also kept in
memory, and if the transcript could not be written during or at the end of the session it is
written again from them, to ``output`` (or the session file), else to a file in the system's
temporary folder; the run then returns 1 and says where the transcript went.
Setup problems raise ``ValueError``/``DeviceNotFound``/``AudioUnavailable`` with one-line messages.
Returns 0, or 1 when the session failed or its transcript could not be written where asked.
"""

from __future__ import annotations

import errno
import signal
import sys
import tempfile
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

from PySide6.QtCore import QCoreApplication, QObject, QTimer, Slot

from captionist import paths
from captionist.alerts.keyword_alerts import KeywordAlerts
from captionist.alerts.watcher import KeywordHit
from captionist.audio.devices import DeviceNotFound, Source, find_source, import_sounddevice, list_sources
from captionist.backend_guard import user_guard
from captionist.engine import Token
from captionist.feed.access import BindAddress, new_token
from captionist.feed.caption_feed import CaptionFeed
from captionist.feed.server import FeedError
from captionist.main_thread_gc import MainThreadCollector
from captionist.models import default_model_path
from captionist.models.info import ModelInfo
from captionist.pipeline.controller import (
    ModelLoader,
    SessionConfig,
    SessionController,
    SessionResult,
)
from captionist.pipeline.disk_thread import bounded
from captionist.pipeline.events import CaptionUpdate
from captionist.pipeline.guarded_loader import guarded_loader
from captionist.pipeline.transcript_target import FolderFallback
from captionist.qt_none_guard import guard_none_refcount
from captionist.settings import Settings
from captionist.transcript import (
    SessionWriter,
    UtteranceEnd,
    check_format,
    render,
    segment_tokens,
    with_utterance_ends,
)
from captionist.transcript.archive import remove_session
from captionist.transcript.folders import folder_key
from captionist.transcript.session import write_atomic
from captionist.transcript.timecode import format_clock

DEFAULT_FORMAT = "txt"  # without -o: timestamped txt in paths.default_transcript_dir()
DEFAULT_TIMESTAMPS = True


class CaptionPrinter(QObject):
    """Prints committed text as it arrives, keeps every committed token (and where utterances
    ended) so the transcript can be written again; collects the session result."""

    def __init__(self, out: TextIO, err: TextIO) -> None:
        super().__init__()
        self.out, self.err = out, err
        self.result: SessionResult | None = None
        self.tokens: list[Token] = []
        self.ends: list[int] = []  # counts of ``tokens`` before each end of utterance
        self._line_open = False
        self._unsaved = False  # the transcript file is behind the captions

    @Slot(object)
    def on_caption(self, update: CaptionUpdate) -> None:
        self.ends += [len(self.tokens) + k for k in update.utterance_ends]
        self.tokens += update.new_tokens
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

    @Slot(float)
    def on_unsaved(self, seconds: float) -> None:
        """Say once when the transcript file falls behind the captions (a slow or hung disk), and
        once when it has caught up."""
        if seconds > 0 and not self._unsaved:
            self.on_message(f"saving the transcript is slow: the file is {seconds:.0f} s behind the captions")
        elif seconds == 0 and self._unsaved:
            self.on_message("the transcript file has caught up")
        self._unsaved = seconds > 0

    def has_text(self) -> bool:
        """Whether any word was captioned (a silent session has none)."""
        return any(not t.is_control and t.piece.strip() for t in self.tokens)

    def render(self, fmt: str, *, token_ms: int, timestamps: bool, meta: dict[str, Any]) -> str:
        """The whole session's transcript in ``fmt``, from the tokens kept in memory."""
        items = [
            t
            for t in with_utterance_ends(self.tokens, self.ends)
            if isinstance(t, UtteranceEnd) or (not t.is_control and t.piece)
        ]
        return render(fmt, segment_tokens(items, token_ms=token_ms), timestamps=timestamps, meta=meta)

    @Slot(object)
    def on_alert(self, hit: KeywordHit) -> None:
        self.on_message(f'keyword "{hit.keyword}" at {format_clock(hit.time_ms)}: {hit.text}')

    @Slot(object)
    def on_finished(self, result: SessionResult) -> None:
        self.result = result
        QCoreApplication.quit()


def check_output(output: Path) -> Path:
    """``output`` if it is a new path or a regular file; a ``ValueError`` otherwise (a device such as
    /dev/full, a directory, a FIFO: an atomic replace would swap it for a regular file)."""
    try:
        special = bounded(lambda: output.exists() and not output.is_file(), output)
    except OSError:  # its disk does not answer: the session's saver will not wait for it either
        return output
    if special:
        raise ValueError(f"-o {output} is not a regular file; give a new path or a regular file")
    return output


def _fallback_path(fmt: str) -> Path:
    stamp = datetime.now().strftime("%Y-%m-%d %H-%M-%S")
    return Path(tempfile.gettempdir()) / f"captionist-{stamp}.{fmt}"


def _export(final: Path, output: Path, fmt: str, meta: dict[str, Any]) -> bool:
    """Write the session's transcript ``final`` to ``output`` in ``fmt``, with the session's
    ``meta`` (model, sources); False if they are one file."""
    if output.resolve() == final.resolve():
        return False
    SessionWriter.export(final, output, fmt, meta=meta)
    return True


def save_transcript(text: str, wanted: Path | None, fmt: str, err: TextIO) -> Path | None:
    """Write ``text`` atomically to ``wanted``, else to a file in the temporary folder; the path
    written, or None (then the captions printed on stdout are the only copy). Says so on ``err``."""

    def write(target: Path) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(target, text)

    for target in ([wanted] if wanted is not None else []) + [_fallback_path(fmt)]:
        try:
            bounded(lambda target=target: write(target), target)
        except OSError as exc:
            print(f"captionist: error: {exc}", file=err, flush=True)
            continue
        return target
    print(
        "captionist: error: the transcript could not be saved; the captions above are its only copy",
        file=err,
        flush=True,
    )
    return None


def _say_captions_file(feed: CaptionFeed, printer: CaptionPrinter) -> None:
    """The captions file (``--captions-file``) started failing, or works again."""
    file = feed.text_file
    if file is not None:
        printer.on_message(file.error or f"the captions file {file.path} is written again")


def start_feed(
    serve: BindAddress | None, token: str | None, captions_file: Path | None, out: TextIO
) -> CaptionFeed:
    """The caption feed for ``--serve``/``--captions-file``; prints ``serving captions at URL`` (the
    first line on stdout) once it listens. A port in use is a ``FeedError`` (an ``OSError``)."""
    settings = Settings()
    settings.feed.text_file = captions_file is not None
    settings.feed.text_file_path = str(captions_file or "")
    feed = CaptionFeed(settings)
    if serve is not None:
        feed.serve(serve, token or (None if serve.loopback else new_token()))
        if feed.server_error is not None:
            raise FeedError(feed.server_error)
        print(f"serving captions at {feed.url}", file=out, flush=True)
    feed.apply_text_file()
    return feed


def choose_sources(device: str | Sequence[str] | None, listing: list[Source]) -> list[Source]:
    """The sources ``--device`` names (each an id or a name part; several are mixed), or the
    default input; ``DeviceNotFound`` for one that matches nothing or names a source again."""
    queries = [device] if device is None or isinstance(device, str) else list(device) or [None]
    chosen: list[Source] = []
    for query in queries:
        source = find_source(query, listing)
        if source in chosen:
            raise DeviceNotFound(f"{query!r} names {source.label()!r} again; give each source once")
        chosen.append(source)
    return chosen


def run_live(
    model: str | None,
    device: str | Sequence[str] | None,
    latency_ms: int | None,
    output: Path | None,
    duration: float | None,
    backend: str = "auto",
    *,
    language: str | None = None,
    delay_ms: int | None = None,
    sd: Any = None,
    model_loader: ModelLoader | None = None,
    writer_factory: Callable[..., Any] = SessionWriter,
    out: TextIO | None = None,
    err: TextIO | None = None,
    serve: BindAddress | None = None,
    serve_token: str | None = None,
    captions_file: Path | None = None,
    keywords: Sequence[str] = (),
) -> int:
    out, err = out or sys.stdout, err or sys.stderr
    model_path = Path(model) if model else default_model_path()
    if model_path is None:
        raise ValueError("no model: pass --model FILE.gguf (or choose one in the desktop app first)")
    if not model_path.is_file():
        raise ValueError(f"model file not found: {model_path}")
    if duration is not None and duration <= 0:
        raise ValueError(f"duration must be > 0 seconds; got {duration}")
    if output is not None:
        output = check_output(Path(output))
        fmt = check_format(output.suffix.lstrip(".").lower() or "txt")
        folder = output.parent if str(output.parent) else Path(".")
    else:
        fmt, folder = DEFAULT_FORMAT, paths.default_transcript_dir()
    sd = sd or import_sounddevice()
    sources = choose_sources(device, list_sources(sd))
    if model_loader is None:  # a model bound for a GPU runs its first second in a crash trial
        model_loader = guarded_loader(user_guard(), notice=lambda m: print(f"captionist: {m}", file=err))
    loaded = model_loader(model_path, backend)
    info = ModelInfo.of(loaded, model_path)
    latency = loaded.resolve_latency(latency_ms, delay_ms)  # None: the model's default
    chosen = loaded.resolve_language(language) or None  # ValueError naming the choices

    guard_none_refcount()  # PySide6 6.12 on Python 3.11 would abort a long session
    app = QCoreApplication.instance() or QCoreApplication([])
    feed = start_feed(serve, serve_token, captions_file, out)
    collector = MainThreadCollector()  # cycles freed here, not on the audio or worker threads
    try:
        ctl = SessionController(
            sd=sd, model_loader=lambda path, backend: loaded, writer_factory=writer_factory
        )
        feed.attach(ctl)
        alerts = KeywordAlerts(keywords)
        alerts.attach(ctl)  # after the feed: a keyword's alert follows its words
        printer = CaptionPrinter(out, err)
        alerts.hit.connect(feed.publish_alert)
        alerts.hit.connect(printer.on_alert)
        ctl.caption.connect(printer.on_caption)
        feed.changed.connect(lambda: _say_captions_file(feed, printer))
        ctl.notice.connect(printer.on_message)
        ctl.error.connect(printer.on_message)
        dead: list[Path] = []  # folders given up because their disk stopped answering

        def on_fallback(moved: FolderFallback) -> None:
            printer.on_message(moved.text())
            if moved.code == errno.ETIMEDOUT:
                dead.append(moved.chosen)

        ctl.folder_fallback.connect(on_fallback)
        ctl.transcript_unsaved.connect(printer.on_unsaved)
        ctl.session_finished.connect(printer.on_finished)
        config = SessionConfig(
            model_path,
            sources,
            latency,
            folder,
            fmt,
            DEFAULT_TIMESTAMPS,
            backend,
            language=chosen,
            token_ms=info.token_ms,
        )
        shown_language = chosen or getattr(loaded, "default_language", None)
        settings_text = f"latency {latency} ms" + (f", language {shown_language}" if shown_language else "")
        print(
            f"captionist: listening to {' + '.join(s.label() for s in sources)} ({settings_text}); "
            "Ctrl-C to stop",
            file=err,
            flush=True,
        )
        if not ctl.start(config):
            return 1
        previous = signal.signal(signal.SIGINT, lambda *_: ctl.stop())
        wake = QTimer()  # lets Python run its signal handler while Qt's loop waits
        wake.timeout.connect(lambda: None)
        wake.start(100)
        if duration is not None:
            QTimer.singleShot(int(duration * 1000), ctl.stop)
        collector.freeze_survivors()  # a long session's full collections skip the set-up
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
        final, failed = result.transcript, result.summary.error is not None
        meta = config.transcript_meta()  # as the session's own file has it
        if output is not None and any(folder_key(d) == folder_key(output.parent) for d in dead):
            # not touched again: each new request to a disk that hangs can hold the exit too
            print(f"captionist: error: {output}: its disk is not answering", file=err, flush=True)
            output, failed = None, True
        if final is not None and output is not None:
            try:
                if bounded(lambda: _export(final, output, fmt, meta), output):
                    remove_session(final)  # output holds all of it: no <start time> files left
                    final = output
            except (OSError, ValueError) as exc:  # the session's own file stays the transcript
                print(f"captionist: error: {exc}", file=err, flush=True)
                failed = True
        if final is None:
            # nothing was said (the session made no file of its own), or the transcript could not be
            # written: write it from the tokens in memory (an explicit -o gets even an empty one)
            silent = result.write_error is None and not printer.has_text()
            if silent and output is None:
                print("captionist: nothing was transcribed; no transcript written", file=err, flush=True)
                return 1 if result.summary.error else 0
            text = printer.render(fmt, token_ms=info.token_ms, timestamps=DEFAULT_TIMESTAMPS, meta=meta)
            wanted = output or (folder / f"{datetime.now().strftime('%Y-%m-%d %H-%M-%S')}.{fmt}")
            saved = save_transcript(text, wanted, fmt, err)
            if saved is not None:
                print(f"captionist: transcript written to {saved}", file=err, flush=True)
            return 1 if result.summary.error or not (silent and saved == output) else 0
        print(f"captionist: transcript written to {final}", file=err, flush=True)
        return 1 if failed else 0
    finally:
        collector.stop()
        feed.shutdown()
