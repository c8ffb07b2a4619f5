"""``DiskThread``: runs one transcript writer's calls, so that a call the disk holds can be given up.

Usage (the saver's thread; ``bounded`` for a one-off call)::

    disk = DiskThread()
    try:
        disk.call(lambda: writer.add_tokens(tokens), timeout_s=10.0)   # its result, or its exception
    except DiskNotAnswering:
        disk.abandon(lambda result: writer.abandon())   # runs once the held call returns, if ever
        disk = DiskThread()                              # a fresh thread for the next writer
    bounded(lambda: export(path), path)                  # DiskTimeout (an OSError) after HANG_S

A write to a network share whose server went away can block in the kernel for minutes; no Python
code can interrupt it. The writer's calls therefore run here, and the caller waits for each one at
most ``timeout_s``. When the disk does not answer in time, the caller abandons the thread (and the
writer) and goes on elsewhere. The thread is a daemon, so one stuck for good never holds up the
app's exit. ``concurrent.futures`` threads are not: they are joined at exit.
"""

from __future__ import annotations

import errno
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any

HANG_S = 10.0  # a disk that has not answered one call for this long is given up


class DiskNotAnswering(Exception):
    """A call did not return within its timeout; the ``DiskThread`` must be abandoned."""


class DiskTimeout(OSError):
    """File work on ``filename`` did not finish in time: its disk is not answering."""

    def __str__(self) -> str:
        return f"{self.filename}: {self.strerror}"


class DiskThread:
    """One daemon thread running calls in order; owned by one caller thread."""

    def __init__(self, name: str = "captionist-disk") -> None:
        self._jobs: queue.SimpleQueue[tuple[Callable[[], Any], Future] | None] = queue.SimpleQueue()
        self._last: Future | None = None
        threading.Thread(target=self._run, name=name, daemon=True).start()

    def call(self, fn: Callable[[], Any], timeout_s: float) -> Any:
        """``fn()`` on this thread: its result, or the exception it raised; ``DiskNotAnswering`` if it
        has not returned after ``timeout_s`` (then it still runs: ``abandon`` this thread)."""
        future: Future = Future()
        self._last = future
        self._jobs.put((fn, future))
        try:
            return future.result(timeout_s)
        except FutureTimeout:
            raise DiskNotAnswering from None

    def abandon(self, cleanup: Callable[[Any], None]) -> None:
        """Give this thread up: once the held call returns (if ever), ``cleanup(its result)`` runs here
        (None if it raised), then the thread ends. Errors in ``cleanup`` are ignored."""
        held = self._last

        def then() -> None:
            result = None
            if held is not None and held.done() and held.exception() is None:
                result = held.result()
            try:
                cleanup(result)
            except Exception:
                pass  # best effort: the files are redundant by now

        self._jobs.put((then, Future()))
        self._jobs.put(None)

    def _run(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            fn, future = job
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn())
            except BaseException as exc:  # handed to the caller, who decides
                future.set_exception(exc)


def bounded(fn: Callable[[], Any], path: Path, timeout_s: float | None = None) -> Any:
    """``fn()`` (some file work on ``path``) on a thread of its own: its result or exception, or
    ``DiskTimeout`` (an ``OSError``, ETIMEDOUT) naming ``path`` if its disk has not answered after
    ``timeout_s`` (default ``HANG_S``; ``fn`` then goes on, on a daemon thread, and its result is
    dropped)."""
    disk = DiskThread()
    try:
        result = disk.call(fn, HANG_S if timeout_s is None else timeout_s)
    except DiskNotAnswering:
        disk.abandon(lambda _: None)
        raise DiskTimeout(errno.ETIMEDOUT, "its disk is not answering", str(path)) from None
    disk.abandon(lambda _: None)  # ends the thread
    return result
