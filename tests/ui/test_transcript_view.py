"""The transcript pane: Find says when nothing matches; each session starts under its date and time."""

from __future__ import annotations

from datetime import datetime

from PySide6.QtCore import Qt

from captionist.engine import Token
from captionist.pipeline.events import CaptionUpdate
from captionist.ui.transcript_view import TranscriptView


def _view(qtbot) -> TranscriptView:
    view = TranscriptView()
    qtbot.addWidget(view)
    return view


def _say(view: TranscriptView, rev: int, words: str) -> None:
    update = CaptionUpdate(revision=rev, text=words, new_text=words, new_tokens=[Token(1, words, 0)])
    view.append_update(update)


def test_find_says_no_match_and_keeps_the_selection(qtbot) -> None:
    view = _view(qtbot)
    _say(view, 1, "hello world hello")
    assert view.find("world") and view.find_status.text() == ""
    assert not view.find("budget")
    assert view.find_status.text() == "No match"
    assert view.text.textCursor().selectedText() == "world"  # what was found before stays selected
    view.search.setText("hel")
    assert view.find_status.text() == ""  # editing the search clears the message
    qtbot.keyClick(view.search, Qt.Key.Key_Return)
    assert view.find_status.text() == "" and view.text.textCursor().selectedText() == "hel"


def test_find_with_an_empty_field_says_nothing(qtbot) -> None:
    view = _view(qtbot)
    assert not view.find("") and view.find_status.text() == ""


def test_each_session_starts_with_its_date_time_and_sources(qtbot) -> None:
    view = _view(qtbot)
    view.begin_session("USB Mic", datetime(2024, 5, 1, 10, 0))
    _say(view, 1, "hello world")
    view.begin_session("USB Mic + Monitor of speakers", datetime(2024, 5, 1, 14, 30))
    _say(view, 1, "okay")
    assert view.plain_text().splitlines() == [
        "— 2024-05-01 10:00 · USB Mic —",
        "hello world",
        "",
        "— 2024-05-01 14:30 · USB Mic + Monitor of speakers —",
        "okay",
    ]
