"""A session writer whose process died: what crash-recovery tests start from."""

from __future__ import annotations

from captionist.transcript import SessionWriter


def died(writer: SessionWriter) -> None:
    """The process died: the files stay as they are (no end record), and the journal is no longer
    held open, so recovery sees a crashed session rather than a running one (``journal_lock``)."""
    writer._journal.close()
