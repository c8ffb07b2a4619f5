from __future__ import annotations

import errno
import os

import pytest

from captionist.pipeline.transcript_target import FolderFallback, open_transcript
from captionist.transcript import SessionWriter


def _open(chosen, default, fmt: str = "srt"):
    return open_transcript(SessionWriter, chosen, default, fmt, token_ms=80)


def test_the_chosen_folder_is_used_when_it_can_be(tmp_path) -> None:
    writer, fallback = _open(tmp_path / "chosen", tmp_path / "default")
    assert fallback is None and writer.path.parent == tmp_path / "chosen"
    assert not (tmp_path / "default").exists()


def test_a_chosen_folder_on_a_missing_drive_is_not_made_again_locally(tmp_path) -> None:
    chosen = tmp_path / "media" / "USB" / "Notes"  # the drive's mount point is gone
    writer, fallback = _open(chosen, tmp_path / "docs" / "Captionist")
    assert fallback == FolderFallback(
        chosen, tmp_path / "docs" / "Captionist", "No such file or directory", errno.ENOENT
    )
    assert fallback.advice() == "Is its drive plugged in? Preferences… can choose another folder."
    assert writer.path.parent == tmp_path / "docs" / "Captionist"  # the default, parents and all
    assert not (tmp_path / "media").exists()


def test_a_chosen_folder_deleted_alone_is_made_again(tmp_path) -> None:
    writer, fallback = _open(tmp_path / "Notes", tmp_path / "default")
    assert fallback is None and writer.path.parent == tmp_path / "Notes"


def test_a_chosen_folder_that_is_a_file_falls_back(tmp_path) -> None:
    (tmp_path / "Notes").write_text("not a folder")
    writer, fallback = _open(tmp_path / "Notes", tmp_path / "default")
    assert fallback is not None and fallback.why == "File exists"
    assert writer.path.parent == tmp_path / "default"
    assert (tmp_path / "Notes").read_text() == "not a folder"


def test_when_no_folder_can_be_written_both_are_named(tmp_path) -> None:
    (tmp_path / "a").write_text("")
    (tmp_path / "b").write_text("")
    with pytest.raises(OSError) as info:
        _open(tmp_path / "a" / "x", tmp_path / "b" / "y")
    assert str(info.value).count("Not a directory") == 2 and "Errno" not in str(info.value)
    assert str(tmp_path / "a" / "x") in str(info.value) and str(tmp_path / "b" / "y") in str(info.value)
    assert info.value.errno == errno.ENOTDIR


def test_a_bad_format_is_not_taken_for_a_bad_folder(tmp_path) -> None:
    with pytest.raises(ValueError):
        _open(tmp_path / "chosen", tmp_path / "default", fmt="doc")
    assert not (tmp_path / "default").exists()


@pytest.mark.parametrize("default", [None, "same"])
def test_the_default_folder_itself_is_made_with_its_parents(tmp_path, default) -> None:
    chosen = tmp_path / "Documents" / "Captionist"
    writer, fallback = _open(chosen, chosen if default == "same" else None)
    assert fallback is None and writer.path.parent == chosen


@pytest.mark.parametrize(
    ("code", "advice"),
    [
        (errno.ENOSPC, "Free some space on its disk, or choose another folder (Preferences…)."),
        (errno.EROFS, "Make it writable, or choose another folder (Preferences…)."),
        (errno.EACCES, "Make it writable, or choose another folder (Preferences…)."),
        (errno.EIO, "Is its drive plugged in? Preferences… can choose another folder."),
        (
            errno.ETIMEDOUT,
            "Is its network share reachable? Preferences… can choose another folder.",
        ),
    ],
)
def test_the_advice_fits_the_failure(tmp_path, code: int, advice: str) -> None:
    assert FolderFallback(tmp_path / "a", tmp_path / "b", os.strerror(code), code).advice() == advice
