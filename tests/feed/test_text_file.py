from __future__ import annotations

from pathlib import Path

from captionist.feed.text_file import CaptionTextFile


def test_the_file_holds_the_current_lines_and_is_rewritten_only_on_change(tmp_path: Path) -> None:
    path = tmp_path / "obs" / "captions.txt"
    f = CaptionTextFile(path)
    assert f.update(["hello world", "one two"])
    assert path.read_text() == "hello world\none two\n"
    mtime = path.stat().st_mtime_ns
    assert f.update(["hello world", "one two"]) and path.stat().st_mtime_ns == mtime
    assert f.update([]) and path.read_text() == ""
    assert not (tmp_path / "obs" / "captions.txt.tmp").exists()


def test_a_failing_write_is_reported_once_and_recovers(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    errors: list[str] = []
    f = CaptionTextFile(blocker / "captions.txt", on_error=errors.append)
    assert not f.update(["a"])
    assert not f.update(["b"])
    assert len(errors) == 1 and "cannot write the captions file" in errors[0] and f.error == errors[0]
    blocker.unlink()
    assert f.update(["c"]) and f.error is None
    assert (blocker / "captions.txt").read_text() == "c\n"
