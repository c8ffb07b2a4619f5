"""A finished session leaves only its transcript: no journal beside it, no empty file for silence."""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

import pytest

from captionist import paths
from captionist.transcript import FORMATS, SessionWriter, parse
from captionist.transcript.archive import MAX_ARCHIVED, archived_journal_path, journal_for
from captionist.transcript.recovery import recover_sessions
from tests.transcript.crash import died
from tests.transcript.tokens import TOKEN_MS, pads, words

STARTED = datetime(2026, 11, 29, 9, 30, 0)


@pytest.mark.parametrize(("fmt", "timestamps"), [("srt", True), ("vtt", True), ("json", True), ("txt", True)])
def test_the_journal_is_removed_once_the_transcript_is_complete(
    tmp_path: Path, fmt: str, timestamps: bool
) -> None:
    w = SessionWriter(tmp_path, fmt, started=STARTED, timestamps=timestamps, token_ms=TOKEN_MS)
    w.add_tokens(words("kept in the transcript"))
    assert w.journal_path.exists()  # while the session runs, the journal is the crash-safe copy
    path = w.close()
    assert sorted(tmp_path.iterdir()) == [path]
    assert [c.text for c in parse(fmt, path.read_text(encoding="utf-8"))] == ["kept in the transcript"]
    dest = tmp_path / "out" / "again.vtt"
    dest.parent.mkdir()
    SessionWriter.export(path, dest, "vtt")  # "Export last session…" still works without it
    assert [c.text for c in parse("vtt", dest.read_text(encoding="utf-8"))] == ["kept in the transcript"]


@pytest.mark.parametrize(("fmt", "timestamps"), [("md", True), ("txt", False)])
def test_formats_without_times_keep_the_journal_in_the_data_folder(
    tmp_path: Path, fmt: str, timestamps: bool
) -> None:
    folder = tmp_path / "transcripts"
    w = SessionWriter(folder, fmt, started=STARTED, timestamps=timestamps, token_ms=TOKEN_MS)
    w.add_tokens(words("only the journal has the times"))
    path = w.close()
    assert sorted(folder.iterdir()) == [path]  # the user's folder holds only the transcript
    assert journal_for(path) == archived_journal_path(path)
    assert archived_journal_path(path).parent == paths.session_journals_dir()
    SessionWriter.export(path, tmp_path / "again.srt", "srt")  # "Export last session…" still has the times
    [cue] = parse("srt", (tmp_path / "again.srt").read_text(encoding="utf-8"))
    assert (cue.text, cue.start_ms, cue.end_ms) == ("only the journal has the times", 0, 6 * TOKEN_MS)


def test_archived_journals_are_bounded_and_kept_apart_per_folder(tmp_path: Path) -> None:
    made = []
    for i in range(MAX_ARCHIVED + 3):
        w = SessionWriter(tmp_path / f"folder{i}", "md", started=STARTED, token_ms=TOKEN_MS)
        w.add_tokens(words(f"session number {i}"))
        made.append(w.close())
        os.utime(archived_journal_path(made[-1]), ns=(i * 10**9, i * 10**9))  # oldest first
    kept = sorted(paths.session_journals_dir().iterdir())
    assert len(kept) == MAX_ARCHIVED  # same start time in 53 folders: 53 names, the 3 oldest pruned
    assert [journal_for(p) is not None for p in made] == [False] * 3 + [True] * MAX_ARCHIVED
    SessionWriter.export(made[-1], tmp_path / "last.vtt", "vtt")
    assert [c.text for c in parse("vtt", (tmp_path / "last.vtt").read_text(encoding="utf-8"))] == [
        f"session number {MAX_ARCHIVED + 2}"
    ]


def test_an_unwritable_archive_keeps_the_journal_beside_and_the_next_start_moves_it(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "transcripts"
    paths.data_dir().mkdir(parents=True)
    paths.session_journals_dir().write_text("not a folder")  # the archive cannot be made
    w = SessionWriter(folder, "md", started=STARTED, token_ms=TOKEN_MS)
    w.add_tokens(words("nothing is lost"))
    path = w.close()
    assert journal_for(path) == w.journal_path  # still beside, so export still works
    paths.session_journals_dir().unlink()
    assert recover_sessions(folder).message() is None  # nothing to say: the session had finished
    assert sorted(folder.iterdir()) == [path]
    assert journal_for(path) == archived_journal_path(path)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_silent_session_leaves_no_file(tmp_path: Path, fmt: str) -> None:
    w = SessionWriter(tmp_path, fmt, started=STARTED, token_ms=TOKEN_MS)
    w.add_tokens(pads(0, 4000))  # the engine ran, nobody spoke
    assert w.close() is None
    assert list(tmp_path.iterdir()) == []
    assert w.close() is None  # closing twice is harmless


def test_a_recovered_markdown_session_keeps_its_journal_in_the_data_folder(tmp_path: Path) -> None:
    folder = tmp_path / "transcripts"
    crashed = SessionWriter(folder, "md", started=STARTED, token_ms=TOKEN_MS)
    crashed.add_tokens(words("said before the crash"))  # never closed
    died(crashed)
    assert recover_sessions(folder).transcripts == [crashed.path]
    assert sorted(folder.iterdir()) == [crashed.path]
    SessionWriter.export(crashed.path, tmp_path / "again.srt", "srt")
    [cue] = parse("srt", (tmp_path / "again.srt").read_text(encoding="utf-8"))
    assert (cue.text, cue.start_ms) == ("said before the crash", 0)
