"""The journal lock on Windows (``msvcrt``), with a fake of its byte-range locks on this system;
tests/platform/test_windows_journal_lock.py runs the same on a real Windows machine."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from captionist.transcript import SessionWriter, journal_lock
from captionist.transcript.journal_lock import LOCK_OFFSET, journal_in_use
from captionist.transcript.recovery import recover_sessions
from tests.fakes.fake_msvcrt import FakeMsvcrt
from tests.transcript.crash import died
from tests.transcript.test_recovery import STARTED
from tests.transcript.tokens import TOKEN_MS, words


@pytest.fixture
def msvcrt(monkeypatch) -> FakeMsvcrt:
    fake = FakeMsvcrt()
    monkeypatch.setattr(journal_lock, "fcntl", None)
    monkeypatch.setattr(journal_lock, "msvcrt", fake)
    real_close = os.close

    def close(fd: int) -> None:  # closing a file frees its locks, as on Windows
        fake.closed(fd)
        real_close(fd)

    monkeypatch.setattr(os, "close", close)
    return fake


def test_a_running_journal_is_held_and_left_alone_and_a_dead_ones_is_recovered(
    tmp_path: Path, msvcrt
) -> None:
    running = SessionWriter(tmp_path, "srt", started=STARTED, token_ms=TOKEN_MS)
    running.add_tokens(words("still talking"))
    journal = running.journal_path
    assert journal_in_use(journal) and not journal_in_use(tmp_path / "none.journal.jsonl")
    assert msvcrt.locked(journal) == [LOCK_OFFSET]  # the probe let go of what it took
    assert journal.stat().st_size < LOCK_OFFSET  # no byte of the data is locked: recovery reads it all
    before = journal.read_bytes()
    assert recover_sessions(tmp_path).sessions == []
    assert journal.read_bytes() == before
    running.add_tokens(words("and on"))  # the writer's position was kept: its lines still append
    assert journal.read_bytes().startswith(before) and b"and" in journal.read_bytes()[len(before) :]
    died(running)
    assert not journal_in_use(journal) and msvcrt.locked(journal) == []
    assert recover_sessions(tmp_path).transcripts == [running.path]


def test_a_file_system_that_refuses_locks_counts_as_not_in_use(tmp_path: Path, msvcrt, monkeypatch) -> None:
    def refuse(fd: int, mode: int, nbytes: int) -> None:
        raise OSError(22, "Invalid argument")

    monkeypatch.setattr(msvcrt, "locking", refuse)
    running = SessionWriter(tmp_path, "srt", started=STARTED, token_ms=TOKEN_MS)  # the writer goes on
    running.add_tokens(words("hello"))
    assert not journal_in_use(running.journal_path)
    running.close()


def test_without_either_lock_nothing_is_in_use(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(journal_lock, "fcntl", None)
    monkeypatch.setattr(journal_lock, "msvcrt", None)
    running = SessionWriter(tmp_path, "srt", started=STARTED, token_ms=TOKEN_MS)
    assert not journal_in_use(running.journal_path)
    running.close()
