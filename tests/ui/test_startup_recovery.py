"""Crash recovery at start-up runs on its own thread: a folder on a disk that does not answer delays
the report, never the window."""

from __future__ import annotations

import threading
from datetime import datetime
from pathlib import Path

import pytest

from captionist.transcript import SessionWriter
from captionist.transcript.recovery import RecoveryReport
from captionist.ui import startup_recovery
from captionist.ui.startup_recovery import StartupRecovery
from tests.transcript.crash import died
from tests.transcript.tokens import TOKEN_MS, words


class HungFolder:
    """``recover_folders`` whose look at ``folder`` waits until ``answer()``, as on a dead share."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
        self.folder, self.gate = folder, threading.Event()
        real = startup_recovery.recover_folders

        def recover(folders, started_before=None, searching=lambda f: None):
            for f in folders:
                if f == folder:
                    searching(f)
                    assert self.gate.wait(30)
            return real(folders, started_before, searching)

        monkeypatch.setattr(startup_recovery, "recover_folders", recover)

    def answer(self) -> None:
        self.gate.set()


def _crashed(folder: Path) -> Path:
    writer = SessionWriter(folder, "srt", started=datetime(2026, 11, 29, 9, 0), token_ms=TOKEN_MS)
    writer.add_tokens(words("hello there"))
    died(writer)
    return writer.path


def test_a_quick_recovery_is_reported_before_wait_returns(qtbot, tmp_path) -> None:
    transcript = _crashed(tmp_path / "notes")
    recovery = StartupRecovery()
    reports: list = []
    recovery.finished.connect(reports.append)
    recovery.start(lambda: [tmp_path / "notes"], datetime.now())
    assert recovery.wait(30)
    [report] = reports  # delivered already: the window shows it as it opens
    assert isinstance(report, RecoveryReport) and report.latest == transcript


def test_a_folder_that_does_not_answer_delays_only_the_report(qtbot, tmp_path, monkeypatch) -> None:
    transcript = _crashed(tmp_path / "share")
    hung = HungFolder(monkeypatch, tmp_path / "share")
    recovery = StartupRecovery()
    reports: list = []
    recovery.finished.connect(reports.append)
    recovery.start(lambda: [tmp_path / "local", tmp_path / "share"], datetime.now())
    assert not recovery.wait(0.05)
    assert recovery.searching == tmp_path / "share" and reports == []  # who is waited for
    with qtbot.waitSignal(recovery.finished, timeout=10000):
        hung.answer()
    assert reports[0].latest == transcript and recovery.searching is None


def test_a_failure_is_reported_not_raised(qtbot) -> None:
    def folders() -> list[Path]:
        raise PermissionError("the data folder cannot be read")

    recovery = StartupRecovery()
    reports: list = []
    recovery.finished.connect(reports.append)
    recovery.start(folders, datetime.now())
    assert recovery.wait(30)
    assert isinstance(reports[0], PermissionError)
