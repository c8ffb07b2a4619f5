"""``TranscriptSaver``: a live session's transcript file, written on a thread of its own.

Usage (the controller, on its thread)::

    saver = TranscriptSaver(open_writer, reopen, chosen, fallback)
    # open_writer: () -> (writer, FolderFallback | None); reopen: folder -> a new writer there
    saver.saved.connect(on_saved)          # int: updates up to this number are done with
    saver.closed.connect(on_closed)        # SaverResult: the transcript's path, or why it failed
    saver.start()
    saver.submit(1, update)                # CaptionUpdate, numbered 1, 2, 3 ... in order
    saver.close()                          # after the last update

Why a thread: every write of a transcript is an ``fsync``, and a folder on a slow or hung disk (a
network share whose server went away, a USB stick busy with a copy) holds each one for as long as
the disk takes. On the GUI thread that froze the window and the overlay: with 0.3 s per create and
per ``fsync`` (a FUSE folder), a 10 s session showed no frame for up to 10 s at a time, and the lag
figure said 300 ms while the captions were 10 s late. Here the wait stalls only this thread.
Updates that pile up meanwhile are written together, one journal write (one ``fsync``) for the
whole batch, so a slow disk delays the file but never falls behind.

A disk that does not answer at all is given up: each writer call runs on a ``DiskThread`` and is
waited for at most ``hang_s``. Then the session goes on in ``fallback`` (else the temporary folder)
with a new writer (``reopen``), which is given everything this saver was handed so far, and
``folder_fallback`` says so. The abandoned writer's files are removed if its disk answers while
the app runs, else by the next start's crash recovery (``transcript.abandoned``).
Without this, a share that stays down would keep everything said since in memory only, lost at
quit or crash, and the session could never finish.

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

import errno
import tempfile
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Signal

from captionist.engine import Token
from captionist.pipeline.disk_thread import HANG_S, DiskNotAnswering, DiskThread
from captionist.pipeline.events import AudioGap, CaptionUpdate
from captionist.pipeline.signals import emit
from captionist.pipeline.transcript_target import FolderFallback, move_session
from captionist.transcript.abandoned import forget_abandoned, remember_abandoned
from captionist.transcript.folders import folder_key, remember_folder

WriterOpener = Callable[[], tuple[Any, FolderFallback | None]]
WriterReopener = Callable[[Path], Any]
NOT_ANSWERING = "its disk is not answering"


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

    def add(self, tokens: list[Token], ends: list[int]) -> None:
        offset = len(self.tokens)
        self.tokens.extend(tokens)
        self.ends.extend(offset + k for k in ends)

    def __bool__(self) -> bool:
        return bool(self.tokens or self.ends)


Record = _Batch | AudioGap  # what a writer was given, in order


def _apply(writer: Any, record: Record) -> None:
    if isinstance(record, AudioGap):
        writer.write_gap(record.start_ms / 1000, record.end_ms / 1000, record.reason.value)
    else:
        writer.add_tokens(record.tokens, utterance_ends=record.ends)


def _replay(writer: Any, records: list[Record]) -> None:
    """Give a new writer everything, in order (``_write`` keeps each run of words as one record)."""
    for record in records:
        _apply(writer, record)


def _last_resort() -> Path:
    """Where a session goes when neither its folder nor the fallback one takes it."""
    return Path(tempfile.gettempdir()) / "Captionist"


def _abandon(writer: Any) -> None:
    """Remove a left writer's files, now that its disk answered (on its own ``DiskThread``)."""
    if writer is not None and hasattr(writer, "abandon"):
        writer.abandon()
        forget_abandoned(writer.journal_path)


def _error_text(exc: Exception) -> str:
    return str(exc) if isinstance(exc, OSError) else f"transcript writer failed: {exc!r}"


class TranscriptSaver(QObject):
    saved = Signal(int)  # updates up to this number are written (or failed)
    folder_fallback = Signal(object)  # FolderFallback: the folder failed, another one is used
    failed = Signal(str)  # the transcript cannot be written (at the start, or from now on)
    closed = Signal(object)  # SaverResult, after close()

    def __init__(
        self,
        open_writer: WriterOpener,
        reopen: WriterReopener,
        chosen: Path,
        fallback: Path | None,
        *,
        hang_s: float = HANG_S,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self._open_writer, self._reopen = open_writer, reopen
        self._chosen, self._fallback, self._hang_s = Path(chosen), fallback, hang_s
        self._queue: deque[tuple[int, CaptionUpdate] | _Close] = deque()
        self._wake = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="captionist-transcript", daemon=True)
        self._disk = DiskThread()
        self._writer: Any = None
        self._records: list[Record] = []  # everything handed to a writer: a new one gets it all
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
                    self._write(batch)
                    if last:
                        emit(self.saved, last)
                    emit(self.closed, self._close())
                    return
                last, update = item
                if update.gap is not None:
                    self._write(batch)
                    batch = _Batch([], [])
                    self._write(update.gap)
                else:
                    batch.add(update.new_tokens, update.utterance_ends)
            self._write(batch)
            emit(self.saved, last)

    def _call(self, fn: Callable[[], Any]) -> Any:
        return self._disk.call(fn, self._hang_s)

    def _open(self) -> None:
        try:
            self._writer, fallback = self._call(self._open_writer)
        except DiskNotAnswering:
            self._leave_disk(lambda opened: _abandon(opened[0] if opened else None))
            self._give_up(self._chosen)
            return
        except Exception as exc:  # thread boundary: OSError (no folder takes it), or a bug
            self._error = f"cannot write the transcript: {exc}"
            emit(self.failed, self._error)
            return
        self.path = self._writer.path
        remember_folder(self.path.parent)
        if fallback is not None:
            emit(self.folder_fallback, fallback)

    def _write(self, record: Record) -> None:
        if not record:
            return
        last = self._records[-1] if self._records else None
        if isinstance(record, _Batch) and isinstance(last, _Batch):
            last.add(record.tokens, record.ends)  # one record per run of words, not one per update
        elif isinstance(record, _Batch):
            self._records.append(_Batch(list(record.tokens), list(record.ends)))  # its own copy
        else:
            self._records.append(record)
        if self._writer is None:
            return
        writer = self._writer
        try:
            self._call(lambda: _apply(writer, record))
        except DiskNotAnswering:
            self._abandon_writer()
        except Exception as exc:  # thread boundary: OSError is the disk; anything else, a bug
            moved = isinstance(exc, OSError) and not self._failing and self._move(exc, final=False)
            if not self._failing and not moved:
                emit(self.failed, _error_text(exc))
                self._failing = True
        else:
            self._failing = False

    def _abandon_writer(self) -> None:
        """The disk holds the writer's call past ``hang_s``: leave it, go on elsewhere."""
        stuck = self._writer
        self._leave_disk(lambda _: _abandon(stuck))
        self._writer = None
        self._give_up(stuck.path.parent, getattr(stuck, "journal_path", None))

    def _give_up(self, hung: Path, stuck_journal: Path | None = None) -> None:
        """``hung`` does not answer: a new writer in the fallback folder (else the temporary one)
        gets everything so far; ``failed`` if none takes it."""
        candidates = [self._fallback, _last_resort()]
        for folder in [f for f in candidates if f is not None and folder_key(f) != folder_key(hung)]:
            made: list[Any] = []  # the new writer, once it exists

            def take_over(folder: Path = folder, made: list[Any] = made) -> None:
                made.append(self._reopen(folder))
                _replay(made[0], self._records)

            try:
                self._call(take_over)
            except DiskNotAnswering:
                self._leave_disk(lambda _, made=made: _abandon(made[0] if made else None))
                continue
            except Exception:  # this folder cannot take it either: the next one
                if made:
                    self._call_quietly(lambda made=made: _abandon(made[0]))
                continue
            self._writer, self.path, self._failing = made[0], made[0].path, False
            remember_folder(folder)
            if stuck_journal is not None:  # if the app closes before its disk answers: recovery
                remember_abandoned(stuck_journal, made[0].path)
            emit(self.folder_fallback, FolderFallback(hung, folder, NOT_ANSWERING, errno.ETIMEDOUT))
            return
        self._error = f"cannot write the transcript: {hung} is not answering, and no other folder takes it"
        self.path = None
        emit(self.failed, self._error)

    def _leave_disk(self, cleanup: Callable[[Any], None]) -> None:
        """The disk holds a call past ``hang_s``: leave its thread (``cleanup`` runs there if the
        call ever returns) and use a fresh one from now on."""
        self._disk.abandon(cleanup)
        self._disk = DiskThread()

    def _call_quietly(self, fn: Callable[[], Any]) -> None:
        try:
            self._call(fn)
        except DiskNotAnswering:
            self._leave_disk(lambda _: None)
        except Exception:
            pass

    def _move(self, exc: OSError, *, final: bool) -> bool:
        """The folder failed with ``exc``: go on in the fallback folder (to close the session, in
        the temporary folder as a last resort) and say where; True if it moved."""
        folders = [self._fallback] if self._fallback is not None else []
        if final:
            folders.append(_last_resort())
        writer = self._writer
        try:
            moved = self._call(lambda: move_session(writer, folders, exc))
        except DiskNotAnswering:
            self._abandon_writer()
            return self._writer is not None
        if moved is None:
            return False
        self.path = writer.path
        remember_folder(moved.used)
        emit(self.folder_fallback, moved)
        return True

    def _close(self) -> SaverResult:
        error = ""
        for _ in range(3):  # the writer; where it moved after a failure, or a new one after a hang
            if self._writer is None:
                return SaverResult(None, self._error)
            writer = self._writer
            try:
                return SaverResult(self._call(writer.close))
            except DiskNotAnswering:
                self._abandon_writer()
                continue
            except Exception as exc:  # thread boundary: OSError is the disk; anything else, a bug
                error = _error_text(exc)
                if not (isinstance(exc, OSError) and self._move(exc, final=True)):
                    break
        emit(self.failed, error)
        return SaverResult(None, error)
