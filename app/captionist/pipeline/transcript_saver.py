"""``TranscriptSaver``: a live session's transcript file, written on a thread of its own.

Usage (the controller, on its thread)::

    saver = TranscriptSaver(open_writer, fallback_folder)   # open_writer: () -> (writer, fallback)
    saver.saved.connect(on_saved)          # int: updates up to this number are done with
    saver.closed.connect(on_closed)        # SaverResult: the transcript's path, or why it failed
    saver.start()
    saver.submit(1, update)                # CaptionUpdate, numbered 1, 2, 3 ... in order
    saver.close()                          # after the last update

Why a thread: every write of a transcript is an ``fsync``, and a folder on a slow or hung disk (a
network share whose server went away, a USB stick busy with a copy) holds each one for as long as
the disk takes. On the GUI thread that froze the window and the overlay: with 0.3 s per create and
per ``fsync`` (a FUSE folder, ``bench/``-style script in the commit), a 10 s session showed no frame
for up to 10 s at a time, and the lag figure said 300 ms while the captions were 10 s late. Here the
wait stalls only this thread. Updates that pile up meanwhile are written together, one journal
write (one ``fsync``) for the whole batch, so a slow disk delays the file but never falls behind.

``saved(n)`` comes once the updates up to ``n`` are on disk, or could not be written: a failed
write is not retried here (the writer keeps the failed tokens and writes them with its next call).
The first failure moves the session to ``fallback`` (``transcript_target.move_session``) and says so
with ``folder_fallback``; if it cannot move, ``failed`` says why, once per run of failures. Opening
happens on this thread too, so a dead share does not freeze the Start button either; when no folder
takes the session, ``failed`` says so and the session goes on without a file. ``close`` writes
what is left and closes the transcript (moving it, as a last resort, to the temporary folder), then
``closed`` reports the result and the thread ends. Each folder used is remembered for crash
recovery (``transcript.folders``).

``submit`` and ``close`` may be called from any thread; the signals are emitted from the saver's
own thread (connect them queued, as Qt does across threads).
"""

from __future__ import annotations

import tempfile
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Signal

from captionist.engine import Token
from captionist.pipeline.events import CaptionUpdate
from captionist.pipeline.signals import emit
from captionist.pipeline.transcript_target import FolderFallback, move_session
from captionist.transcript.folders import remember_folder

WriterOpener = Callable[[], tuple[Any, FolderFallback | None]]


@dataclass(frozen=True)
class SaverResult:
    path: Path | None  # None: nothing was said (no file is made), or it could not be written
    error: str | None = None  # why the transcript could not be written


class _Close:
    """The queue's last item: close the transcript."""


@dataclass
class _Batch:
    """Consecutive updates' tokens as one ``add_tokens`` call."""

    tokens: list[Token]
    ends: list[int]

    def add(self, update: CaptionUpdate) -> None:
        offset = len(self.tokens)
        self.tokens.extend(update.new_tokens)
        self.ends.extend(offset + k for k in update.utterance_ends)


class TranscriptSaver(QObject):
    saved = Signal(int)  # updates up to this number are written (or failed)
    folder_fallback = Signal(object)  # FolderFallback: the folder failed, another one is used
    failed = Signal(str)  # the transcript cannot be written (at the start, or from now on)
    closed = Signal(object)  # SaverResult, after close()

    def __init__(
        self, open_writer: WriterOpener, fallback: Path | None, parent: QObject | None = None
    ) -> None:
        super().__init__(parent)
        self._open_writer, self._fallback = open_writer, fallback
        self._queue: deque[tuple[int, CaptionUpdate] | _Close] = deque()
        self._wake = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="captionist-transcript", daemon=True)
        self._writer: Any = None
        self._error: str | None = None  # why no transcript could be opened
        self._failing = False
        self.path: Path | None = None  # the file being written; read from any thread

    # --- any thread ------------------------------------------------------------------------------
    def start(self) -> None:
        self._thread.start()

    def submit(self, number: int, update: CaptionUpdate) -> None:
        """Write ``update`` (numbers increase by one per call); ``saved`` follows."""
        with self._wake:
            self._queue.append((number, update))
            self._wake.notify()

    def close(self) -> None:
        """Write what is queued, close the transcript and end the thread; ``closed`` follows."""
        with self._wake:
            self._queue.append(_Close())
            self._wake.notify()

    def join(self, timeout_s: float | None = None) -> bool:
        """Wait for the thread to end (after ``close``); False if it is still running."""
        if self._thread.ident is None:
            return True
        self._thread.join(timeout_s)
        return not self._thread.is_alive()

    # --- the saver's thread ------------------------------------------------------------------------
    def _run(self) -> None:
        self._open()
        while True:
            with self._wake:
                while not self._queue:
                    self._wake.wait()
                items = list(self._queue)
                self._queue.clear()
            last = 0
            batch = _Batch([], [])
            for item in items:
                if isinstance(item, _Close):
                    self._write_batch(batch)
                    if last:
                        emit(self.saved, last)
                    emit(self.closed, self._close())
                    return
                last, update = item
                if update.gap is not None:
                    self._write_batch(batch)
                    batch = _Batch([], [])
                    gap = update.gap
                    self._write(
                        lambda g=gap: self._writer.write_gap(
                            g.start_ms / 1000, g.end_ms / 1000, g.reason.value
                        )
                    )
                else:
                    batch.add(update)
            self._write_batch(batch)
            emit(self.saved, last)

    def _open(self) -> None:
        try:
            self._writer, fallback = self._open_writer()
        except Exception as exc:  # thread boundary: OSError (no folder takes it), or a bug
            self._error = f"cannot write the transcript: {exc}"
            emit(self.failed, self._error)
            return
        self.path = self._writer.path
        remember_folder(self.path.parent)
        if fallback is not None:
            emit(self.folder_fallback, fallback)

    def _write_batch(self, batch: _Batch) -> None:
        if batch.tokens or batch.ends:
            self._write(lambda: self._writer.add_tokens(batch.tokens, utterance_ends=batch.ends))

    def _write(self, write: Callable[[], None]) -> None:
        if self._writer is None:
            return
        try:
            write()
        except Exception as exc:  # thread boundary: OSError is the disk; anything else, a bug
            moved = isinstance(exc, OSError) and not self._failing and self._move(exc, final=False)
            if not self._failing and not moved:
                emit(
                    self.failed,
                    str(exc) if isinstance(exc, OSError) else f"transcript writer failed: {exc!r}",
                )
                self._failing = True
        else:
            self._failing = False

    def _move(self, exc: OSError, *, final: bool) -> bool:
        """The folder failed with ``exc``: go on in the fallback folder (to close the session, in
        the temporary folder as a last resort) and say where; True if it moved."""
        folders = [self._fallback] if self._fallback is not None else []
        if final:
            folders.append(Path(tempfile.gettempdir()) / "Captionist")
        moved = move_session(self._writer, folders, exc)
        if moved is None:
            return False
        self.path = self._writer.path
        remember_folder(moved.used)
        emit(self.folder_fallback, moved)
        return True

    def _close(self) -> SaverResult:
        if self._writer is None:
            return SaverResult(None, self._error)
        try:
            try:
                path = self._writer.close()
            except OSError as exc:
                if not self._move(exc, final=True):
                    raise
                path = self._writer.close()
        except Exception as exc:  # thread boundary, as in _write
            error = str(exc) if isinstance(exc, OSError) else f"transcript writer failed: {exc!r}"
            emit(self.failed, error)
            return SaverResult(None, error)
        return SaverResult(path)
