"""Export last session: the file type chosen in the save dialog sets the extension."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtWidgets import QFileDialog

from captionist.transcript import FORMATS, parse
from captionist.ui.export_path import export_destination, export_filters, format_of_filter


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_filter_names_its_format(fmt: str) -> None:
    entry = next(f for f in export_filters().split(";;") if f.startswith(fmt.upper()))
    assert format_of_filter(entry) == fmt
    assert export_destination("/tmp/meeting", entry) == Path(f"/tmp/meeting.{fmt}")


def test_a_typed_transcript_extension_wins_and_others_get_the_chosen_one() -> None:
    assert export_destination("/tmp/notes.vtt", "SRT (*.srt)") == Path("/tmp/notes.vtt")
    assert export_destination("/tmp/notes.SRT", "TXT (*.txt)") == Path("/tmp/notes.SRT")
    assert export_destination("/tmp/notes.2024", "MD (*.md)") == Path("/tmp/notes.2024.md")
    assert export_destination("/tmp/notes", "All files (*)") == Path("/tmp/notes")


def test_export_dialog_without_extension_uses_the_chosen_type(
    app_parts, qtbot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    win = app_parts[0]
    session = tmp_path / "session.srt"
    session.write_text("1\n00:00:01,000 --> 00:00:02,000\nhello world\n")
    win.show_recovery_notice("Recovered one session.", session)
    dest = tmp_path / "meeting"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(dest), "VTT (*.vtt)"))
    win.export_button.click()
    assert win.error_banner.isHidden(), win.error_banner.text()
    written = tmp_path / "meeting.vtt"
    assert " ".join(c.text for c in parse("vtt", written.read_text())).split() == ["hello", "world"]
    assert not dest.exists()


def test_an_export_to_a_disk_that_does_not_answer_is_given_up_and_said(
    qtbot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    from captionist.pipeline import disk_thread
    from captionist.transcript import SessionWriter
    from captionist.ui.export_button import ExportButton

    errors: list[str] = []
    button = ExportButton(show_error=errors.append, show_status=lambda message: None)
    qtbot.addWidget(button)
    session = tmp_path / "session.srt"
    session.write_text("1\n00:00:01,000 --> 00:00:02,000\nhello world\n")
    button.set_transcript(session)
    share = threading.Event()
    monkeypatch.setattr(disk_thread, "HANG_S", 0.1)
    monkeypatch.setattr(SessionWriter, "export", staticmethod(lambda *args, **kwargs: share.wait(30)))
    dest = tmp_path / "share" / "meeting.vtt"
    try:
        assert not button.export(dest)  # returns: the window is not held until the share answers
    finally:
        share.set()
    assert errors == [f"{dest}: its disk is not answering"]
