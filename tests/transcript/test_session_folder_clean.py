"""A finished session leaves only its transcript: no journal beside it, no empty file for silence."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from captionist.transcript import FORMATS, SessionWriter, parse
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
def test_formats_without_times_keep_the_journal(tmp_path: Path, fmt: str, timestamps: bool) -> None:
    w = SessionWriter(tmp_path, fmt, started=STARTED, timestamps=timestamps, token_ms=TOKEN_MS)
    w.add_tokens(words("only the journal has the times"))
    w.close()
    assert w.journal_path.exists()
    SessionWriter.export(w.path, tmp_path / "again.srt", "srt")
    [cue] = parse("srt", (tmp_path / "again.srt").read_text(encoding="utf-8"))
    assert (cue.start_ms, cue.end_ms) == (0, 6 * TOKEN_MS)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_silent_session_leaves_no_file(tmp_path: Path, fmt: str) -> None:
    w = SessionWriter(tmp_path, fmt, started=STARTED, token_ms=TOKEN_MS)
    w.add_tokens(pads(0, 4000))  # the engine ran, nobody spoke
    assert w.close() is None
    assert list(tmp_path.iterdir()) == []
    assert w.close() is None  # closing twice is harmless
