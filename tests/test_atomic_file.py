"""replace_file: the old file or the new one, never half, and nothing left behind on failure."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from captionist import atomic_file
from captionist.atomic_file import replace_file


def test_text_and_bytes_replace_the_file_whole(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    replace_file(path, "first\nline é\n", durable=True)
    assert path.read_bytes() == "first\nline é\n".encode()  # UTF-8, \n kept as is on every OS
    replace_file(path, b"\x00\x01", durable=False)
    assert path.read_bytes() == b"\x00\x01"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]


@pytest.mark.parametrize("fail", ["write", "replace"])
def test_a_failure_leaves_the_old_file_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fail: str
) -> None:
    path = tmp_path / "keep.txt"
    path.write_text("old", encoding="utf-8")

    def full(*_: object, **__: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(atomic_file.os, "fsync" if fail == "write" else "replace", full)
    with pytest.raises(OSError) as caught:
        replace_file(path, "new", durable=True)
    assert caught.value.errno == errno.ENOSPC
    assert path.read_text(encoding="utf-8") == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt"]


def test_durable_syncs_the_file_and_its_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append("dir" if os.path.isdir(f"/proc/self/fd/{fd}") else "file")
        real_fsync(fd)

    monkeypatch.setattr(atomic_file.os, "fsync", fsync)
    replace_file(tmp_path / "x", "1", durable=False)
    assert synced == []
    replace_file(tmp_path / "x", "2", durable=True)
    if os.path.isdir("/proc/self/fd"):
        assert synced == ["file", "dir"]
    else:  # pragma: no cover - without /proc the kinds cannot be told apart
        assert len(synced) == 2


def test_a_hidden_temporary_is_named_so_that_folder_watchers_skip_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[str] = []
    real_replace = os.replace

    def replace(src: str | Path, dst: str | Path) -> None:
        seen.append(Path(src).name)
        real_replace(src, dst)

    monkeypatch.setattr(atomic_file.os, "replace", replace)
    replace_file(tmp_path / "captionist.desktop", b"[Desktop Entry]\n", durable=False, hidden_temp=True)
    replace_file(tmp_path / "notes.txt", "x", durable=False)
    assert seen == [".captionist.desktop.tmp", "notes.txt.tmp"]


def test_a_missing_folder_is_an_error_not_a_crash(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        replace_file(tmp_path / "no" / "such" / "file", "x", durable=True)
