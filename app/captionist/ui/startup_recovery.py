"""Crash recovery at start-up, on a thread of its own, so a folder on a dead disk cannot stop the app.

Usage (the GUI thread, while the app is built)::

    recovery = StartupRecovery(parent=window)
    recovery.finished.connect(show_report)         # RecoveryReport, or an Exception
    recovery.start(lambda: [chosen, default, *remembered_folders()], started_before=app_started)
    if not recovery.wait(2.0):                      # a folder's disk is slow or not answering
        window.show_notice(f"still checking {recovery.searching} ...")

Recovery looks in the transcript folder, the default folder and every folder a session was ever
written to (``transcript.folders``). One of them may be a network share whose server is gone or a
drive that hangs: every ``stat`` there can take minutes. Measured with a FUSE folder whose every
lookup took 10 s, the app took 21 s to open its window. Here the app waits at most ``wait``'s
timeout (the report is then shown at once, as before), and otherwise opens and shows the report
when the folders have answered. Sessions this run starts meanwhile are left alone
(``started_before``, see ``transcript.recovery``).

``finished`` is emitted on the thread that owns the ``StartupRecovery`` (the GUI thread), exactly once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QObject, Signal, Slot

from captionist.pipeline.signals import emit
from captionist.transcript.recovery import recover_folders


class StartupRecovery(QObject):
    finished = Signal(object)  # RecoveryReport, or the Exception that stopped it
    _ended = Signal(object)  # the same, from the recovery thread

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._ended.connect(self._deliver)  # queued: this object lives on the GUI thread
        self._done = threading.Event()
        self.searching: Path | None = None  # the folder being looked at; read from any thread

    def start(self, folders: Callable[[], list[Path]], started_before: datetime) -> None:
        """Recover the sessions in ``folders()`` (called on the recovery thread)."""
        threading.Thread(
            target=self._run, args=(folders, started_before), name="captionist-recovery", daemon=True
        ).start()

    def wait(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` for recovery; if it ended, deliver ``finished`` before returning.
        False: it is still running (``searching`` names the folder it waits for)."""
        if not self._done.wait(timeout_s):
            return False
        QCoreApplication.sendPostedEvents(self)
        return True

    def _run(self, folders: Callable[[], list[Path]], started_before: datetime) -> None:
        try:
            report: object = recover_folders(folders(), started_before, self._searching)
        except Exception as exc:  # the thread's boundary: reported, never raised
            report = exc
        self.searching = None
        emit(self._ended, report)  # posted before wait() can see the end
        self._done.set()

    @Slot(object)
    def _deliver(self, report: object) -> None:
        emit(self.finished, report)

    def _searching(self, folder: Path) -> None:
        self.searching = folder
