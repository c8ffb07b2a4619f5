from __future__ import annotations

import errno
import json
import os
from datetime import datetime
from pathlib import Path

import pytest

from captionist.engine import Token
from captionist.transcript import (
    FORMATS,
    SessionWriter,
    TranscriptWriteError,
    parse,
    read_journal,
    render,
    segment_tokens,
)
from captionist.transcript import journal as journal_module
from captionist.transcript.recovery import recover_sessions
from tests.transcript.crash import died
from tests.transcript.tokens import TOKEN_MS, pads, words

STARTED = datetime(2026, 11, 29, 9, 30, 0)


def stream() -> list[list[Token]]:
    """Stream updates: two sentences, a pause (pads), a third sentence."""
    a = words("Good morning everyone. Let us start with the weekly numbers", start_ms=0)
    b = words("Sales grew by four percent.", start_ms=3000, first_id=2000)
    return [a[:3], a[3:7], a[7:], pads(880, 3000), b[:2], b[2:]]


def all_tokens() -> list[Token]:
    return [t for update in stream() for t in update]


def test_file_name_layout_and_unique_names(tmp_path: Path) -> None:
    w1 = SessionWriter(tmp_path / "sessions", "srt", started=STARTED, token_ms=TOKEN_MS)
    w2 = SessionWriter(tmp_path / "sessions", "srt", started=STARTED, token_ms=TOKEN_MS)
    assert w1.path == tmp_path / "sessions" / "2026-11-29 09-30-00.srt"
    assert w1.journal_path == tmp_path / "sessions" / "2026-11-29 09-30-00.journal.jsonl"
    assert w2.path.name == "2026-11-29 09-30-00 (2).srt"
    w1.close()
    w2.close()


@pytest.mark.parametrize("fmt", FORMATS)
def test_closed_file_equals_rendering_all_tokens(tmp_path: Path, fmt: str) -> None:
    w = SessionWriter(tmp_path, fmt, started=STARTED, meta={"model": "m.gguf"}, token_ms=TOKEN_MS)
    for update in stream():
        w.add_tokens(update)
    path = w.close()
    expected = render(fmt, segment_tokens(all_tokens(), token_ms=TOKEN_MS), timestamps=True, meta=w.meta)
    assert path.read_text(encoding="utf-8") == expected
    assert "Sales grew by four percent." in expected.replace("\n", " ")


@pytest.mark.parametrize("fmt", ["srt", "vtt", "json", "txt"])
def test_finished_captions_are_in_the_file_before_close(tmp_path: Path, fmt: str) -> None:
    w = SessionWriter(tmp_path, fmt, started=STARTED, token_ms=TOKEN_MS)
    updates = stream()
    for update in updates[:3]:
        w.add_tokens(update)
    # a sentence end only closes a caption once the next word arrives
    assert parse(fmt, w.path.read_text(encoding="utf-8")) == [
        segment_tokens(all_tokens(), token_ms=TOKEN_MS)[0]
    ]
    w.add_tokens(updates[3])  # pads: the clock passes the pause, so the open caption is finished
    assert parse(fmt, w.path.read_text(encoding="utf-8")) == segment_tokens(
        updates[0] + updates[1] + updates[2], token_ms=TOKEN_MS
    )
    w.close()


def test_appended_file_is_a_prefix_of_the_final_file(tmp_path: Path) -> None:
    for fmt in ("txt", "md"):
        w = SessionWriter(tmp_path / fmt, fmt, started=STARTED, timestamps=False, token_ms=TOKEN_MS)
        for update in stream()[:4]:
            w.add_tokens(update)
        partial = w.path.read_text(encoding="utf-8")
        for update in stream()[4:]:
            w.add_tokens(update)
        final = w.close().read_text(encoding="utf-8")
        assert "weekly numbers" in partial
        assert final.startswith(partial) and final != partial


def test_journal_holds_every_committed_text_token(tmp_path: Path) -> None:
    w = SessionWriter(tmp_path, "srt", started=STARTED, meta={"model": "m.gguf"}, token_ms=TOKEN_MS)
    for update in stream():
        w.add_tokens(update)
    contents = read_journal(w.journal_path)
    assert contents.tokens == [t for t in all_tokens() if not t.is_control]
    assert not contents.finished
    assert contents.header["meta"]["model"] == "m.gguf" and contents.header["fmt"] == "srt"
    w.close()
    with pytest.raises(ValueError, match="already closed"):
        w.add_tokens(words("late"))


@pytest.mark.parametrize("fmt", FORMATS)
def test_export_from_journal_in_every_format(tmp_path: Path, fmt: str) -> None:
    w = SessionWriter(tmp_path / "s", "srt", started=STARTED, meta={"model": "m.gguf"}, token_ms=TOKEN_MS)
    for update in stream():
        w.add_tokens(update)
    dest = tmp_path / f"out.{fmt}"
    SessionWriter.export(w.journal_path, dest, fmt)  # the open caption is included
    w.close()
    captions = segment_tokens(all_tokens(), token_ms=TOKEN_MS)
    assert dest.read_text(encoding="utf-8") == render(fmt, captions, timestamps=True, meta=w.meta)
    if fmt != "md":
        parsed = parse(fmt, dest.read_text(encoding="utf-8"))
        assert [c.text.replace("\n", " ") for c in parsed] == [c.one_line for c in captions]


def test_export_from_a_transcript_file_without_journal(tmp_path: Path) -> None:
    captions = segment_tokens(all_tokens(), token_ms=TOKEN_MS)
    src = tmp_path / "talk.srt"
    src.write_text(render("srt", captions), encoding="utf-8")
    SessionWriter.export(src, tmp_path / "talk.vtt", "vtt")
    assert parse("vtt", (tmp_path / "talk.vtt").read_text(encoding="utf-8")) == captions
    with pytest.raises(ValueError, match="cannot read transcript"):
        SessionWriter.export(tmp_path / "missing.srt", tmp_path / "x.vtt", "vtt")


def test_unwritable_folder_raises_a_clear_oserror(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the folder should be")
    with pytest.raises(TranscriptWriteError, match="cannot write transcript file") as info:
        SessionWriter(blocker / "sessions", "srt", started=STARTED, token_ms=TOKEN_MS)
    assert isinstance(info.value, OSError)
    assert str(blocker) in str(info.value)


def test_full_disk_raises_and_keeps_the_tokens_for_the_next_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    w = SessionWriter(tmp_path, "srt", started=STARTED, token_ms=TOKEN_MS)
    updates = stream()
    w.add_tokens(updates[0])
    real_write = os.write
    calls = {"n": 0}

    def half_then_full(fd: int, data: memoryview | bytes) -> int:
        calls["n"] += 1
        if calls["n"] == 1:
            return real_write(fd, bytes(data[: len(data) // 2]))  # a torn write ...
        raise OSError(errno.ENOSPC, "No space left on device")  # ... then the disk is full

    monkeypatch.setattr(journal_module.os, "write", half_then_full)
    with pytest.raises(TranscriptWriteError, match="No space left on device"):
        w.add_tokens(updates[1])
    monkeypatch.setattr(journal_module.os, "write", real_write)
    for update in updates[2:]:
        w.add_tokens(update)
    lines = w.journal_path.read_text(encoding="utf-8").splitlines()
    assert all(json.loads(line) for line in lines)  # no torn line left in the middle
    assert read_journal(w.journal_path).tokens == [t for t in all_tokens() if not t.is_control]
    w.close()
    assert parse("srt", w.path.read_text(encoding="utf-8")) == segment_tokens(all_tokens(), token_ms=TOKEN_MS)


def test_recover_rebuilds_unclosed_sessions_only(tmp_path: Path) -> None:
    crashed = SessionWriter(tmp_path, "vtt", started=STARTED, token_ms=TOKEN_MS)
    for update in stream():
        crashed.add_tokens(update)
    died(crashed)
    done = SessionWriter(tmp_path, "srt", started=datetime(2026, 11, 29, 11, 0, 0), token_ms=TOKEN_MS)
    done.add_tokens(words("finished fine"))
    done.close()
    with open(crashed.journal_path, "ab") as f:
        f.write(b'{"id": 7, "p": " tor')  # a write cut short by the crash
    assert recover_sessions(tmp_path).transcripts == [crashed.path]
    assert parse("vtt", crashed.path.read_text(encoding="utf-8")) == segment_tokens(
        all_tokens(), token_ms=TOKEN_MS
    )
    assert not crashed.journal_path.exists()  # the rebuilt transcript is complete on its own
    assert recover_sessions(tmp_path).transcripts == []


def test_clock_finishes_the_open_caption_without_control_tokens(tmp_path: Path) -> None:
    w = SessionWriter(tmp_path, "srt", started=STARTED, token_ms=TOKEN_MS)
    w.add_tokens(words("no pads from this engine"))  # last token at 320 ms, ends at 400 ms
    w.add_tokens([], clock_ms=400 + 799)
    assert not w.path.exists()  # no caption is finished yet
    w.add_tokens([], clock_ms=400 + 800)
    assert [c.text for c in parse("srt", w.path.read_text(encoding="utf-8"))] == ["no pads from this engine"]
    w.close()


def test_ends_of_utterance_become_cues_and_lines_and_survive_the_journal(tmp_path: Path) -> None:
    a, b = words("so that is settled"), words("next item", start_ms=320, first_id=2000)
    for fmt, want in [("srt", None), ("txt", "so that is settled\nnext item\n")]:
        w = SessionWriter(tmp_path / fmt, fmt, started=STARTED, timestamps=False, token_ms=TOKEN_MS)
        w.add_tokens(a + pads(320, 320), utterance_ends=[4])  # the end comes after the last token
        assert [c.text for c in w.captions] == ["so that is settled"]  # finished at once, no pause
        w.add_tokens(b)
        assert read_journal(w.journal_path).tokens == a + b
        captions, header = SessionWriter.captions_from_journal(w.journal_path)
        path = w.close()
        if want is not None:
            assert path.read_text(encoding="utf-8") == want
        else:
            assert [c.text for c in parse("srt", path.read_text(encoding="utf-8"))] == [
                "so that is settled",
                "next item",
            ]
        assert header["token_ms"] == TOKEN_MS
        assert [(c.text, c.starts_utterance) for c in captions] == [
            ("so that is settled", False),
            ("next item", True),
        ]


def test_journals_without_token_ms_are_read_as_voxtral_ones(tmp_path: Path) -> None:
    journal = tmp_path / "old.journal.jsonl"
    lines = [{"type": "session", "version": 1, "fmt": "srt", "timestamps": True}]
    lines += [{"id": 1, "p": " old", "t": 0}, {"id": 2, "p": " file", "t": 80}]
    journal.write_text("".join(json.dumps(x) + "\n" for x in lines))
    captions, _ = SessionWriter.captions_from_journal(journal)
    assert [(c.text, c.end_ms) for c in captions] == [("old file", 160)]


def test_the_writer_uses_the_models_token_duration(tmp_path: Path) -> None:
    w = SessionWriter(tmp_path, "srt", started=STARTED, token_ms=40)
    w.add_tokens(words("quick", step_ms=40))
    assert w.close().read_text().splitlines()[1] == "00:00:00,000 --> 00:00:00,040"
