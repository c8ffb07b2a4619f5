"""The journal lock on a real Windows machine: byte-range locks are mandatory there, so the writer
locks a byte far past the data; recovery's probe sees it held, and still reads every byte.

Skipped on every other OS (tests/transcript/test_journal_lock_windows.py checks the same logic with
a fake ``msvcrt`` there). The hosted workflow (.github/workflows/platform-tests.yml) runs it; by
hand, from a checkout on Windows: ``$env:PYTHONPATH = "app"; python -m pytest -m platform
tests/platform/test_windows_journal_lock.py -v``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.platform,
    pytest.mark.skipif(sys.platform != "win32", reason="msvcrt byte-range locks exist only on Windows"),
]


def test_a_journal_being_written_is_held_and_still_readable(tmp_path: Path) -> None:
    from captionist.transcript.journal import JournalWriter
    from captionist.transcript.journal_lock import journal_in_use

    path = tmp_path / "s.journal.jsonl"
    writer = JournalWriter(path, {"started": "2026-12-05T10:00:00"})
    try:
        assert journal_in_use(path)
        assert journal_in_use(path)  # the first probe let go of what it took
        data = path.read_bytes()  # another handle reads the whole journal: no data byte is locked
        assert data.startswith(b'{"type": "session"')
    finally:
        writer.close()
    assert not journal_in_use(path)
