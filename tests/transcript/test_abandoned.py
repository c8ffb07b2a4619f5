"""The list of journals left on a disk that stopped answering: kept small, and never a failure."""

from __future__ import annotations

import json

import pytest

from captionist.transcript.abandoned import (
    MAX_ENTRIES,
    abandoned_file,
    forget_abandoned,
    remember_abandoned,
    taken_over_by,
)


def test_remembered_until_forgotten(tmp_path) -> None:
    half, whole = tmp_path / "share" / "a.journal.jsonl", tmp_path / "docs" / "a.srt"
    assert taken_over_by(half) is None
    assert remember_abandoned(half, whole)
    assert taken_over_by(tmp_path / "share" / ".." / "share" / "a.journal.jsonl") == whole
    assert forget_abandoned(half) and taken_over_by(half) is None
    assert forget_abandoned(half)  # nothing to forget: nothing written, still fine


def test_the_list_keeps_the_newest_entries(tmp_path) -> None:
    for i in range(MAX_ENTRIES + 5):
        remember_abandoned(tmp_path / f"{i}.journal.jsonl", tmp_path / f"{i}.srt")
    assert taken_over_by(tmp_path / "0.journal.jsonl") is None
    last = MAX_ENTRIES + 4
    assert taken_over_by(tmp_path / f"{last}.journal.jsonl") == tmp_path / f"{last}.srt"
    assert len(json.loads(abandoned_file().read_text())) == MAX_ENTRIES


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"{not json",
        b"[" * 100_000,
        b'{"a": 1}',
        b"\xff\xfe",
        json.dumps([[1, 2], ["rel", "x"], "s"]).encode(),
    ],
)
def test_a_hostile_list_counts_as_empty_and_is_replaced(tmp_path, content: bytes) -> None:
    abandoned_file().parent.mkdir(parents=True, exist_ok=True)
    abandoned_file().write_bytes(content)
    assert taken_over_by(tmp_path / "a.journal.jsonl") is None
    assert remember_abandoned(tmp_path / "a.journal.jsonl", tmp_path / "a.srt")
    assert taken_over_by(tmp_path / "a.journal.jsonl") == tmp_path / "a.srt"
