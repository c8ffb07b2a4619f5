"""Dropped audio is marked in the journal and in every transcript format, and survives recovery."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from captionist.transcript import FORMATS, SessionWriter, parse, read_journal
from captionist.transcript.journal import Gap
from captionist.transcript.recovery import recover_sessions
from tests.transcript.crash import died
from tests.transcript.tokens import TOKEN_MS, words

STARTED = datetime(2026, 11, 29, 9, 30, 0)
MARK = "[7.5 s of audio not transcribed: the engine fell behind]"


def write_with_gap(folder: Path, fmt: str) -> SessionWriter:
    w = SessionWriter(folder, fmt, started=STARTED, timestamps=False, token_ms=TOKEN_MS)
    w.add_tokens(words("before the gap"))  # still open: no pause has finished it yet
    w.write_gap(0.5, 8.0, "the engine  fell\nbehind")
    w.add_tokens(words("after it", start_ms=8000, first_id=2000))
    return w


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_gap_is_marked_in_every_format(tmp_path: Path, fmt: str) -> None:
    w = write_with_gap(tmp_path, fmt)
    assert [c.text for c in w.captions] == ["before the gap", MARK]  # the open caption was finished
    text = w.close().read_text(encoding="utf-8")
    assert MARK in text
    assert text.index("before the gap") < text.index(MARK) < text.index("after it")
    if fmt == "txt":
        assert text == f"before the gap\n{MARK}\nafter it\n"
    if fmt in ("srt", "vtt"):
        gap = parse(fmt, text)[1]
        assert (gap.start_ms, gap.end_ms, gap.text) == (500, 8000, MARK)


def test_the_gap_is_in_the_journal_and_survives_recovery(tmp_path: Path) -> None:
    w = write_with_gap(tmp_path, "srt")  # never closed: the app crashed
    died(w)
    assert Gap(500, 8000, "the engine fell behind") in read_journal(w.journal_path).items
    assert read_journal(w.journal_path).tokens == words("before the gap") + words(
        "after it", start_ms=8000, first_id=2000
    )
    w.path.unlink()
    assert recover_sessions(tmp_path).transcripts == [w.path]
    assert [c.text for c in parse("srt", w.path.read_text(encoding="utf-8"))] == [
        "before the gap",
        MARK,
        "after it",
    ]


def test_rebuilding_from_the_journal_gives_what_was_written_live(tmp_path: Path) -> None:
    w = write_with_gap(tmp_path, "txt")  # plain txt: the journal is kept after close
    live = w.close().read_text(encoding="utf-8")
    dest = tmp_path / "again.txt"
    SessionWriter.export(w.journal_path, dest, "txt", timestamps=False)
    assert dest.read_text(encoding="utf-8") == live


BAD_TIMES = [(-1.0, 2.0), (3.0, 2.0), (0.0, float("nan")), (0.0, float("inf"))]


@pytest.mark.parametrize(("start", "end"), BAD_TIMES)
def test_bad_gap_times_are_an_error_and_write_nothing(tmp_path: Path, start: float, end: float) -> None:
    w = SessionWriter(tmp_path, "srt", started=STARTED, token_ms=TOKEN_MS)
    with pytest.raises(ValueError, match="a gap needs finite times"):
        w.write_gap(start, end, "x")
    assert read_journal(w.journal_path).items == []
    w.close()


def test_a_gap_whose_journal_write_failed_still_splits_the_text_where_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file written after the disk recovers is the one the journal rebuilds: the words before
    the gap, the gap's mark, the words after it, not the words run together across it."""
    import errno
    import os

    from captionist.transcript import TranscriptWriteError
    from captionist.transcript import journal as journal_module

    w = SessionWriter(tmp_path, "srt", token_ms=TOKEN_MS)
    w.add_tokens(words("before the gap"))
    real_write = os.write

    def full(fd: int, data) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(journal_module.os, "write", full)
    with pytest.raises(TranscriptWriteError):
        w.write_gap(0.5, 2.0, "the engine fell behind")
    monkeypatch.setattr(journal_module.os, "write", real_write)
    w.add_tokens(words("after it", start_ms=2000, first_id=2000))
    rebuilt = SessionWriter.captions_from_journal(w.journal_path)[0]  # what a recovery would write
    written = parse("srt", w.close().read_text(encoding="utf-8"))
    assert [c.text for c in written] == [
        "before the gap",
        "[1.5 s of audio not transcribed: the engine fell behind]",
        "after it",
    ]
    assert rebuilt == written
