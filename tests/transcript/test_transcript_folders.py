from __future__ import annotations

import json
from pathlib import Path

import pytest

from captionist import paths
from captionist.transcript.folders import MAX_FOLDERS, folders_file, remember_folder, remembered_folders


def test_folders_are_remembered_newest_first_once_each(tmp_path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    assert remembered_folders() == []
    assert remember_folder(a) and remember_folder(b) and remember_folder(a)
    assert remembered_folders() == [a, b]
    assert json.loads(folders_file().read_text(encoding="utf-8")) == [str(a), str(b)]


def test_a_relative_folder_is_remembered_as_absolute(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert remember_folder(Path("out"))
    assert remembered_folders() == [tmp_path / "out"]


def test_the_list_is_bounded_and_drops_the_oldest(tmp_path) -> None:
    for i in range(MAX_FOLDERS + 3):
        remember_folder(tmp_path / f"f{i}")
    folders = remembered_folders()
    assert len(folders) == MAX_FOLDERS
    assert folders[0] == tmp_path / f"f{MAX_FOLDERS + 2}" and tmp_path / "f2" not in folders


@pytest.mark.parametrize(
    "content",
    [
        b"not json",
        b'{"a": 1}',
        b"\xff\xfe",
        b"[" * 100_000,
        b'[1, null, "", "relative", "/x\\u0000y", "/' + b"a" * 5000 + b'"]',
        b'["/a", ' + b" " * (2 << 20) + b"]",
    ],
    ids=["text", "object", "not UTF-8", "deep nesting", "bad entries", "huge"],
)
def test_a_bad_list_counts_as_empty_and_is_replaced(tmp_path, content: bytes) -> None:
    folders_file().parent.mkdir(parents=True, exist_ok=True)
    folders_file().write_bytes(content)
    assert remembered_folders() == []
    assert remember_folder(tmp_path / "a")
    assert remembered_folders() == [tmp_path / "a"]


def test_good_entries_survive_bad_ones_beside_them(tmp_path) -> None:
    folders_file().parent.mkdir(parents=True, exist_ok=True)
    good = str(tmp_path / "good")
    folders_file().write_text(json.dumps([7, good, "relative", good]), encoding="utf-8")
    assert remembered_folders() == [Path(good)]


def test_a_data_folder_that_cannot_be_written_is_reported_not_raised(tmp_path) -> None:
    paths.data_dir().parent.mkdir(parents=True, exist_ok=True)
    paths.data_dir().write_bytes(b"")  # a file where the data folder should be
    assert remember_folder(tmp_path / "a") is False
    assert remembered_folders() == []
