"""A text file that always holds the current caption lines, for OBS "Text (read from file)" sources.

Usage::

    file = CaptionTextFile(Path("~/captions.txt").expanduser(), on_change=refresh)
    file.update(hub.current_lines(2, 42))   # returns at once; the file is rewritten on its own thread
    file.error                               # why the last write failed (None: it worked)
    file.wait(2.0)                           # until the last lines given are written (tests, exit)
    file.close()                             # the thread ends after the write it is doing

Each write replaces the file whole (a temporary file beside it, then an atomic rename), so a reader
never sees half a caption. It is not synced to disk: the file is a view, not the transcript.

Writes happen on a thread of the file's own, so a slow or hung disk (a network folder whose server
went away) never holds up the captions; while a write is under way, newer lines replace older ones
that are still waiting, and only the newest is written next. A write that fails (a full disk, a
folder that went away, Windows refusing the rename while a reader holds the file) is not raised:
``error`` says why, ``on_change`` is called when the file starts failing and when it works again,
and the next change tries again. ``on_change`` is called on the file's thread.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from captionist.atomic_file import replace_file


class CaptionTextFile:
    def __init__(self, path: Path, on_change: Callable[[], None] | None = None) -> None:
        self.path = path
        self.error: str | None = None
        self._on_change = on_change
        self._cond = threading.Condition()
        self._given: str | None = None  # the last text given to update()
        self._waiting: str | None = None  # given and not yet taken by the thread
        self._writing = False
        self._closed = False
        self._written: str | None = None  # what the file holds (the thread's)
        self._thread = threading.Thread(target=self._run, name="captions-file", daemon=True)
        self._thread.start()

    def update(self, lines: list[str]) -> None:
        """Have the file hold ``lines`` (written soon, on the file's thread, if they changed)."""
        text = "\n".join(lines) + ("\n" if lines else "")
        with self._cond:
            if self._closed or (text == self._given and self.error is None):
                return  # (after a failure the same lines are tried again)
            self._given = self._waiting = text
            self._cond.notify_all()

    def wait(self, timeout_s: float) -> bool:
        """Wait until the last lines given are written, or failed to be; False if that took longer
        than ``timeout_s`` (a disk that does not answer)."""
        with self._cond:
            return self._cond.wait_for(lambda: self._waiting is None and not self._writing, timeout_s)

    def close(self) -> None:
        """Write nothing more; the thread ends once the write under way returns."""
        with self._cond:
            self._closed, self._waiting = True, None
            self._cond.notify_all()

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._waiting is not None or self._closed)
                if self._closed:
                    return
                text, self._waiting, self._writing = self._waiting, None, True
            error = None if text == self._written else self._write(text)
            with self._cond:
                changed = (error is None) != (self.error is None)
                self.error = error
                self._writing = False
                self._cond.notify_all()
            if changed and self._on_change is not None:
                self._on_change()

    def _write(self, text: str) -> str | None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            replace_file(self.path, text, durable=False)
        except OSError as exc:
            self._written = None  # unknown: the next text is written whatever it is
            return f"cannot write the captions file {self.path}: {exc.strerror or exc}"
        self._written = text
        return None
