"""The captions text file for OBS: whole-file rewrites on a thread of its own, never holding up
the captions, newest lines first, failures reported once and recovered from."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from captionist.feed import text_file
from captionist.feed.text_file import CaptionTextFile

WAIT_S = 10.0


def test_the_file_holds_the_current_lines_and_is_rewritten_only_on_change(tmp_path: Path) -> None:
    path = tmp_path / "obs" / "captions.txt"
    f = CaptionTextFile(path)
    f.update(["hello world", "one two"])
    assert f.wait(WAIT_S) and path.read_text() == "hello world\none two\n"
    mtime = path.stat().st_mtime_ns
    f.update(["hello world", "one two"])
    assert f.wait(WAIT_S) and path.stat().st_mtime_ns == mtime
    f.update([])
    assert f.wait(WAIT_S) and path.read_text() == ""
    assert not (tmp_path / "obs" / "captions.txt.tmp").exists()
    f.close()


def test_a_failing_write_is_reported_once_and_recovers(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    changes: list[str | None] = []
    f = CaptionTextFile(blocker / "captions.txt", on_change=lambda: changes.append(f.error))
    f.update(["a"])
    assert f.wait(WAIT_S)
    f.update(["a"])  # tried again
    assert f.wait(WAIT_S)
    assert len(changes) == 1 and "cannot write the captions file" in str(changes[0]) and f.error == changes[0]
    blocker.unlink()
    f.update(["a"])
    assert f.wait(WAIT_S) and f.error is None and changes[1:] == [None]
    assert (blocker / "captions.txt").read_text() == "a\n"
    f.close()


def test_a_hung_disk_never_holds_up_update_and_only_the_newest_lines_are_written_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release, inside = threading.Event(), threading.Event()
    written: list[str] = []
    real = text_file.replace_file

    def hung_then_real(path: Path, text: str, durable: bool = True) -> None:
        inside.set()
        assert release.wait(WAIT_S)
        written.append(text)
        real(path, text, durable=durable)

    monkeypatch.setattr(text_file, "replace_file", hung_then_real)
    path = tmp_path / "captions.txt"
    f = CaptionTextFile(path)
    f.update(["one"])
    assert inside.wait(WAIT_S)  # the thread is stuck in the first write
    for word in ("two", "three", "four"):
        f.update([word])  # returns at once
    assert not f.wait(0.05) and written == []
    release.set()
    assert f.wait(WAIT_S)
    assert written == ["one\n", "four\n"] and path.read_text() == "four\n"
    f.close()


def test_close_ends_the_thread_and_later_lines_are_not_written(tmp_path: Path) -> None:
    path = tmp_path / "captions.txt"
    f = CaptionTextFile(path)
    f.update(["one"])
    assert f.wait(WAIT_S)
    f.close()
    f._thread.join(WAIT_S)
    assert not f._thread.is_alive()
    f.update(["two"])
    assert f.wait(WAIT_S) and path.read_text() == "one\n"
