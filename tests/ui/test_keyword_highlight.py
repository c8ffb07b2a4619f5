"""Keywords in the overlay and the live transcript: whole words, per line, as the feed marks them."""

from __future__ import annotations

from captionist.alerts.keywords import KeywordList
from captionist.settings import OverlaySettings
from captionist.ui.overlay import CaptionOverlay
from captionist.ui.transcript_view import TranscriptView
from tests.fakes.caption_updates import UpdateMaker


def test_the_overlay_marks_keywords_within_each_line(qtbot) -> None:
    overlay = CaptionOverlay(OverlaySettings(lines=3), pin=None)
    qtbot.addWidget(overlay)
    overlay.resize(900, 200)
    u = UpdateMaker()
    overlay.show_update(u.make([" hello", " Alice,", " two"], ends=[3]))
    overlay.show_update(u.make([" three", " Alicia", " budget", " review"]))
    assert overlay.alert_words() == []
    overlay.set_keywords(KeywordList.parse(["alice", "two three", "budget review"]), "#ff0000")
    assert overlay.alert_words() == ["Alice,", "budget", "review"]  # "two | three" spans an utterance end
    overlay.grab()  # paints with the marks (must not raise)
    overlay.set_keywords(KeywordList(), "#ff0000")
    assert overlay.alert_words() == []


def test_the_transcript_highlights_keywords_as_words_grow(qtbot) -> None:
    view = TranscriptView()
    qtbot.addWidget(view)
    view.set_keywords(KeywordList.parse(["alice", "budget review"]), "#ff9f43")
    u = UpdateMaker()
    view.append_update(u.make([" hello", " Al"]))
    assert view.highlighted_words() == []
    view.append_update(u.make(["ice", " budget"]))
    assert view.highlighted_words() == ["Alice"]
    view.append_update(u.make([" review."], ends=[1]))
    view.append_update(u.make([" Alicia", " alice"], final=True))
    assert view.highlighted_words() == ["Alice", "budget", "review.", "alice"]
    view.set_keywords(KeywordList(), "#ff9f43")
    assert view.highlighted_words() == []


def test_chinese_keywords_are_marked_inside_runs_without_spaces(qtbot) -> None:
    overlay = CaptionOverlay(OverlaySettings(lines=3), pin=None)
    qtbot.addWidget(overlay)
    overlay.resize(900, 200)
    view = TranscriptView()
    qtbot.addWidget(view)
    keywords = KeywordList.parse(["预算"])
    overlay.set_keywords(keywords, "#ff0000")
    view.set_keywords(keywords, "#ff9f43")
    u = UpdateMaker()
    update = u.make(["新产品的推广计划和", "预算安排。预测"])
    overlay.show_update(update)
    view.append_update(update)
    assert overlay.alert_words() == ["预", "算"]
    assert view.highlighted_words() == ["预算"]  # one run of highlighted text
    assert "".join(overlay.visible_lines()) == "新产品的推广计划和预算安排。预测"
