"""Crash recovery keeps every valid record, skips only bad lines, never shrinks, sets aside the rest."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from captionist.transcript import SessionWriter, parse, read_journal
from captionist.transcript.recovery import RecoveryOutcome, recover_folders, recover_sessions
from tests.transcript.crash import died
from tests.transcript.tokens import TOKEN_MS, words

STARTED = datetime(2026, 11, 29, 9, 30, 0)
SPOKEN = "one two three four five six"


def crashed_session(folder: Path, fmt: str = "srt") -> SessionWriter:
    """A session that committed ``SPOKEN`` and was never closed (the app was killed)."""
    w = SessionWriter(folder, fmt, started=STARTED, token_ms=TOKEN_MS)
    tokens = words(SPOKEN)
    w.add_tokens(tokens[:3])
    w.add_tokens(tokens[3:])
    died(w)
    return w


def insert_line(journal: Path, line: bytes, at: int) -> None:
    """Put ``line`` before line number ``at`` (1-based) of the journal."""
    lines = journal.read_bytes().split(b"\n")
    lines.insert(at - 1, line)
    journal.write_bytes(b"\n".join(lines))


def words_in(path: Path, fmt: str = "srt") -> list[str]:
    return " ".join(c.text for c in parse(fmt, path.read_text(encoding="utf-8"))).split()


ODD_LINES = {
    "a number": b"123",
    "null": b"null",
    "a list": b"[1, 2]",
    "a token without id": b'{"p": " ghost", "t": 100}',
    "a token with a string id": b'{"id": "7", "p": " ghost", "t": 100}',
    "a negative time": b'{"id": 7, "p": " ghost", "t": -80}',
    "a float time": b'{"id": 7, "p": " ghost", "t": 1e300}',
    "a bad gap": b'{"type": "gap", "start_ms": 9, "end_ms": 1, "reason": "x"}',
    "non-UTF-8 bytes": b'{"id": 7, "p": " \xff\xfe", "t": 100}',
    "broken JSON": b'{"id": 7, "p": ',
    "deep nesting": b"[" * 100_000,
    "a second header": b'{"type": "session", "fmt": "docx"}',
}


@pytest.mark.parametrize("odd", list(ODD_LINES), ids=list(ODD_LINES))
@pytest.mark.parametrize("where", [2, 4, 6])  # after the header, in the middle, before the last token
def test_one_odd_line_anywhere_keeps_every_valid_token(tmp_path: Path, odd: str, where: int) -> None:
    w = crashed_session(tmp_path)
    insert_line(w.journal_path, ODD_LINES[odd], where)
    contents = read_journal(w.journal_path)
    assert [t.piece.strip() for t in contents.tokens] == SPOKEN.split()
    assert contents.skipped_lines == [where]
    report = recover_sessions(tmp_path)
    [session] = report.sessions
    assert session.outcome is RecoveryOutcome.REBUILT and session.transcript == w.path
    assert words_in(w.path) == SPOKEN.split()
    assert "1 unreadable line skipped" in (report.message() or "")
    assert session.aside is not None and ODD_LINES[odd] in session.aside.read_bytes()  # raw bytes kept
    assert not w.journal_path.exists()
    assert recover_sessions(tmp_path).sessions == []  # done once


def test_a_truncated_last_line_is_ignored_and_reported(tmp_path: Path) -> None:
    w = crashed_session(tmp_path)
    with open(w.journal_path, "ab") as f:
        f.write(b'{"id": 9, "p": " sev')
    report = recover_sessions(tmp_path)
    assert words_in(w.path) == SPOKEN.split()
    assert "cut short" in (report.message() or "")


def test_an_unknown_format_in_the_header_is_written_as_txt(tmp_path: Path) -> None:
    w = crashed_session(tmp_path)
    lines = w.journal_path.read_text(encoding="utf-8").splitlines(keepends=True)
    header = json.loads(lines[0])
    header.update(fmt="docx", max_chars="wide", token_ms=-3, meta=[1])
    w.journal_path.write_text(json.dumps(header) + "\n" + "".join(lines[1:]), encoding="utf-8")
    report = recover_sessions(tmp_path)
    [session] = report.sessions
    assert session.transcript == tmp_path / "2026-11-29 09-30-00.txt"
    assert session.transcript.read_text(encoding="utf-8").split()[-6:] == SPOKEN.split()
    assert "unknown transcript format 'docx'" in (report.message() or "")


def test_an_unreadable_header_with_valid_tokens_still_recovers(tmp_path: Path) -> None:
    w = crashed_session(tmp_path)
    lines = w.journal_path.read_bytes().split(b"\n")
    w.journal_path.write_bytes(b"\n".join([b"\x00\x01garbage", *lines[1:]]))
    report = recover_sessions(tmp_path)
    [session] = report.sessions
    assert session.outcome is RecoveryOutcome.REBUILT
    assert session.transcript is not None and SPOKEN in session.transcript.read_text(encoding="utf-8")
    assert "session header" in (report.message() or "")


@pytest.mark.parametrize("content", [b"", b"123\n", b"\xff\xfe\xfd\n", b"not a journal at all\n"])
def test_a_journal_that_cannot_be_read_at_all_is_set_aside(tmp_path: Path, content: bytes) -> None:
    journal = tmp_path / "2026-11-29 09-30-00.journal.jsonl"
    journal.write_bytes(content)
    good = crashed_session(tmp_path / "other").journal_path
    good.rename(tmp_path / good.name.replace("09-30-00", "10-00-00"))
    report = recover_sessions(tmp_path)
    assert [s.outcome for s in report.sessions] == [RecoveryOutcome.SET_ASIDE, RecoveryOutcome.REBUILT]
    aside = tmp_path / "2026-11-29 09-30-00.journal.jsonl.unreadable"
    assert not journal.exists() and aside.read_bytes() == content
    message = report.message() or ""
    assert "Could not read 2026-11-29 09-30-00.journal.jsonl" in message and aside.name in message
    assert report.latest == tmp_path / "2026-11-29 10-00-00.srt"
    assert "\n" not in message


def test_recovery_never_replaces_a_transcript_with_a_shorter_one(tmp_path: Path) -> None:
    w = crashed_session(tmp_path)
    w.add_tokens([], clock_ms=5000)  # the caption is finished: the transcript holds all six words
    lines = w.journal_path.read_bytes().split(b"\n")
    w.journal_path.write_bytes(b"\n".join(lines[:3] + [b""]))  # the journal lost four words
    before = w.path.read_bytes()
    report = recover_sessions(tmp_path)
    [session] = report.sessions
    assert session.outcome is RecoveryOutcome.KEPT_LONGER
    assert w.path.read_bytes() == before
    beside = tmp_path / "2026-11-29 09-30-00 (recovered).srt"
    assert words_in(beside) == ["one", "two"]
    assert beside.name in (report.message() or "")


def test_a_journal_without_text_never_empties_its_transcript(tmp_path: Path) -> None:
    w = crashed_session(tmp_path)
    w.add_tokens([], clock_ms=5000)
    lines = w.journal_path.read_bytes().split(b"\n")
    w.journal_path.write_bytes(lines[0] + b"\nnull\n")
    before = w.path.read_bytes()
    [session] = recover_sessions(tmp_path).sessions
    assert session.outcome is RecoveryOutcome.KEPT_LONGER and w.path.read_bytes() == before


def test_a_crashed_session_without_text_leaves_nothing(tmp_path: Path) -> None:
    w = SessionWriter(tmp_path, "vtt", started=STARTED, token_ms=TOKEN_MS)
    w.add_tokens([], clock_ms=3000)
    died(w)
    [session] = recover_sessions(tmp_path).sessions
    assert session.outcome is RecoveryOutcome.NO_TEXT
    assert list(tmp_path.iterdir()) == []


def test_a_folder_that_cannot_be_written_is_reported_not_raised(tmp_path: Path) -> None:
    w = crashed_session(tmp_path)
    w.path.mkdir()  # a folder where the transcript should go: it cannot be written
    report = recover_sessions(tmp_path)
    [session] = report.sessions
    assert session.outcome is RecoveryOutcome.FAILED
    assert (report.message() or "").startswith("Could not recover 2026-11-29 09-30-00.journal.jsonl")
    assert w.journal_path.exists()  # kept for the next start


def test_several_folders_are_each_searched_once_newest_session_last(tmp_path: Path) -> None:
    early = SessionWriter(tmp_path / "b", "srt", started=datetime(2026, 11, 29, 8, 0), token_ms=TOKEN_MS)
    early.add_tokens(words("early words"))
    died(early)
    late = crashed_session(tmp_path / "a")
    report = recover_folders([tmp_path / "a", tmp_path / "b", tmp_path / "b" / ".." / "a", tmp_path / "gone"])
    assert report.transcripts == [early.path, late.path]  # by start time, not by folder order
    assert report.latest == late.path
    assert words_in(early.path) == ["early", "words"] and words_in(late.path) == SPOKEN.split()


def test_a_session_this_run_started_is_left_alone(tmp_path: Path) -> None:
    """Recovery may still run (a slow disk) when the user starts a session: its journal has no end
    yet, and must not be sealed and rebuilt under the writer's feet."""
    crashed = crashed_session(tmp_path)  # started 09:30:00, before the app
    live = SessionWriter(tmp_path, "srt", started=datetime(2026, 11, 29, 10, 0, 5), token_ms=TOKEN_MS)
    live.add_tokens(words("still talking"))
    before = live.journal_path.read_bytes()
    searched: list[Path] = []
    app_started = datetime(2026, 11, 29, 10, 0, 5, 400000)  # the same second as the session
    report = recover_folders([tmp_path], app_started, searched.append)
    assert report.transcripts == [crashed.path] and searched == [tmp_path]
    assert live.journal_path.read_bytes() == before  # untouched: no end record, no rebuild
    live.add_tokens(words("and on"))
    assert words_in(live.close()) == ["still", "talking", "and", "on"]
    assert recover_folders([tmp_path]).sessions == []  # closed: nothing left to recover


def test_a_journal_another_writer_holds_is_left_alone(tmp_path: Path) -> None:
    """``captionist live`` in another process writes a journal while the desktop app starts: the
    journal is held (``journal_lock``), so recovery does not take it for a crashed session."""
    from captionist.transcript.journal_lock import journal_in_use

    running = SessionWriter(tmp_path, "srt", started=STARTED, token_ms=TOKEN_MS)
    running.add_tokens(words("still talking"))
    assert journal_in_use(running.journal_path) and not journal_in_use(tmp_path / "none.journal.jsonl")
    before = running.journal_path.read_bytes()
    assert recover_sessions(tmp_path).sessions == []
    assert running.journal_path.read_bytes() == before
    died(running)  # the process is killed: now it is a crashed session
    assert not journal_in_use(running.journal_path)
    assert recover_sessions(tmp_path).transcripts == [running.path]
