"""A session whose folder stops taking writes goes on in another folder and loses nothing."""

from __future__ import annotations

import errno
import os
from datetime import datetime
from pathlib import Path

import pytest

from captionist.transcript import (
    FORMATS,
    SessionWriter,
    TranscriptWriteError,
    read_journal,
)
from captionist.transcript import journal as journal_module
from captionist.transcript.archive import journal_for
from captionist.transcript.journal import JournalWriter
from captionist.transcript.recovery import recover_sessions
from captionist.transcript.session import journal_needed
from tests.transcript.crash import died
from tests.transcript.tokens import TOKEN_MS, pads, words

STARTED = datetime(2026, 11, 29, 9, 30, 0)


def stream() -> list[list]:
    a = words("Good morning everyone. Let us start with the weekly numbers", start_ms=0)
    b = words("Sales grew by four percent.", start_ms=3000, first_id=2000)
    return [a[:3], a[3:7], a[7:], pads(880, 3000), b[:2], b[2:]]


def pull_out(monkeypatch: pytest.MonkeyPatch, writer: SessionWriter) -> None:
    """Every later write to ``writer``'s open journal fails, as when its drive is pulled out."""
    dead = writer._journal._fd
    real_write = os.write

    def write(fd: int, data) -> int:
        if fd == dead:
            raise OSError(errno.EIO, "Input/output error")
        return real_write(fd, data)

    monkeypatch.setattr(journal_module.os, "write", write)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_session_moved_after_its_folder_failed_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    """The moved session ends as the same session written without a failure would have."""
    updates = stream()
    ref = SessionWriter(tmp_path / "ref", fmt, started=STARTED, token_ms=TOKEN_MS)
    w = SessionWriter(tmp_path / "usb", fmt, started=STARTED, token_ms=TOKEN_MS)
    for writer in (ref, w):
        for update in updates[:2]:
            writer.add_tokens(update)
        writer.write_gap(1.0, 1.5, "the engine fell behind")
    pull_out(monkeypatch, w)
    with pytest.raises(TranscriptWriteError, match="Input/output error"):
        w.add_tokens(updates[2])
    w.move_to(tmp_path / "docs" / "Captionist")
    assert w.journal_path.parent == tmp_path / "docs" / "Captionist"
    ref.add_tokens(updates[2])
    for update in updates[3:]:
        for writer in (ref, w):
            writer.add_tokens(update)
        assert w.path.read_text(encoding="utf-8") == ref.path.read_text(encoding="utf-8")
    ref_path, path = ref.close(), w.close()
    assert path is not None and path.parent == tmp_path / "docs" / "Captionist"
    assert path.read_text(encoding="utf-8") == ref_path.read_text(encoding="utf-8")
    assert "not transcribed" in path.read_text(encoding="utf-8")
    if journal_needed(fmt, True):  # the journal it keeps for export has every token and the gap
        assert read_journal(journal_for(path)).items == read_journal(journal_for(ref_path)).items
    assert list((tmp_path / "usb").iterdir()) == []  # the half copy there is removed: no duplicate later


def test_a_crash_after_the_move_is_recovered_from_the_new_folder(tmp_path: Path, monkeypatch) -> None:
    updates = stream()
    w = SessionWriter(tmp_path / "usb", "srt", started=STARTED, token_ms=TOKEN_MS)
    w.add_tokens(updates[0])
    pull_out(monkeypatch, w)
    with pytest.raises(TranscriptWriteError):
        w.add_tokens(updates[1])
    w.move_to(tmp_path / "docs")
    w.add_tokens(updates[2])  # then the app is killed
    died(w)
    assert recover_sessions(tmp_path / "docs").transcripts == [w.path]
    text = w.path.read_text(encoding="utf-8")
    assert "Good" in text and "Let" in text and "numbers" in text


def test_a_move_that_fails_changes_nothing(tmp_path: Path, monkeypatch) -> None:
    updates = stream()
    w = SessionWriter(tmp_path / "usb", "srt", started=STARTED, token_ms=TOKEN_MS)
    w.add_tokens(updates[0])
    (tmp_path / "file").write_text("")
    with pytest.raises(TranscriptWriteError, match="Not a directory"):
        w.move_to(tmp_path / "file" / "docs")
    real_write = os.write
    calls = {"n": 0}

    def full(fd: int, data) -> int:
        calls["n"] += 1
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(journal_module.os, "write", full)
    with pytest.raises(TranscriptWriteError, match="No space left on device"):
        w.move_to(tmp_path / "full")
    assert list((tmp_path / "full").iterdir()) == []  # no half-written journal left there
    monkeypatch.setattr(journal_module.os, "write", real_write)
    assert w.path.parent == tmp_path / "usb"
    for update in updates[1:]:
        w.add_tokens(update)
    assert "percent." in w.close().read_text(encoding="utf-8")


def test_a_journal_whose_first_line_cannot_be_written_leaves_no_file(tmp_path: Path, monkeypatch) -> None:
    def full(fd: int, data) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(journal_module.os, "write", full)
    with pytest.raises(TranscriptWriteError):
        JournalWriter(tmp_path / "j.journal.jsonl", {"fmt": "srt"})
    assert list(tmp_path.iterdir()) == []
