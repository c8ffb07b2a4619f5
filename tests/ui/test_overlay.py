from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QColor, QImage

from captionist.engine import Token
from captionist.pipeline.events import AudioGap, CaptionUpdate, GapReason
from captionist.settings import OverlaySettings
from captionist.ui.overlay import GAP_MARK, GAP_SHORT, TAIL_CHARS, CaptionOverlay


def _update(rev: int, text: str, new: str) -> CaptionUpdate:
    return CaptionUpdate(revision=rev, text=text, new_text=new, new_tokens=[Token(1, new, 0)])


@pytest.fixture
def overlay(qtbot) -> CaptionOverlay:
    ov = CaptionOverlay(OverlaySettings(lines=2, font_size=20))
    qtbot.addWidget(ov)
    ov.resize(400, ov.height())
    ov.show()
    return ov


def test_revisions_update_text_and_keep_last_lines(overlay: CaptionOverlay) -> None:
    text = ""
    for rev, word in enumerate(["alpha", "beta", "gamma"], start=1):
        text += " " + word
        overlay.show_update(_update(rev, text, " " + word))
    assert overlay.visible_lines() == ["alpha beta gamma"]
    overlay.show_update(_update(2, " stale", " stale"))  # an older revision never replaces newer text
    assert overlay.visible_lines() == ["alpha beta gamma"]
    long_text = text + "".join(f" word{i}" for i in range(60))
    overlay.show_update(_update(4, long_text, long_text[len(text) :]))
    lines = overlay.visible_lines()
    assert len(lines) == 2 and lines[-1].endswith("word59")
    assert " ".join(lines) in " ".join(long_text.split())  # a contiguous tail, wrapped at words


def test_newest_words_are_styled_apart(overlay: CaptionOverlay) -> None:
    overlay.settings.newest_color = "#00ff00"
    overlay.settings.text_color = "#ff0000"
    overlay.settings.outline = False
    overlay.settings.background_opacity = 0.0
    overlay.show_update(_update(1, " old", " old"))
    overlay.show_update(_update(2, " old new", " new"))
    assert overlay.newest_words() == ["new"]
    img = overlay.grab().toImage().convertToFormat(QImage.Format.Format_ARGB32)
    colours = {
        QColor(img.pixel(x, y)).name()
        for x in range(img.width())
        for y in range(img.height())
        if QColor(img.pixel(x, y)).alpha() == 255
    }
    assert "#00ff00" in colours and "#ff0000" in colours


def test_line_count_and_opacity_are_clamped(overlay: CaptionOverlay) -> None:
    overlay.settings.lines = 25
    overlay.settings.background_opacity = 3
    overlay.apply_settings()
    assert overlay.settings.lines == 10 and overlay.settings.background_opacity == 1.0
    one = CaptionOverlay(OverlaySettings(lines=1, font_size=20))
    assert overlay.height() > 5 * one.height()


def test_click_through_toggle_and_back(overlay: CaptionOverlay, qtbot) -> None:
    with qtbot.waitSignal(overlay.settings_changed):
        overlay.set_click_through(True)
    assert overlay.is_click_through() and overlay.settings.click_through
    assert overlay.testAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
    assert overlay.isVisible()
    overlay.set_click_through(False)
    assert not overlay.is_click_through() and not overlay.settings.click_through


def test_drag_moves_and_geometry_is_remembered_per_screen(overlay: CaptionOverlay, qtbot) -> None:
    overlay.move(100, 100)
    start = overlay.geometry()
    qtbot.mousePress(overlay, Qt.MouseButton.LeftButton, pos=QPoint(30, 10))
    qtbot.mouseMove(overlay, QPoint(80, 50))
    qtbot.mouseRelease(overlay, Qt.MouseButton.LeftButton, pos=QPoint(80, 50))
    assert overlay.pos() != start.topLeft()
    screen = overlay.screen().name()
    g = overlay.geometry()
    assert overlay.settings.geometry[screen] == [g.x(), g.y(), g.width(), g.height()]
    assert overlay.settings.position == "custom"
    again = CaptionOverlay(overlay.settings)
    qtbot.addWidget(again)
    again.restore_geometry()
    assert again.geometry() == g


def test_position_presets(overlay: CaptionOverlay) -> None:
    area = overlay.screen().availableGeometry()
    overlay.apply_position("top")
    top = overlay.y()
    overlay.apply_position("bottom")
    assert overlay.geometry().bottom() <= area.bottom() and overlay.y() > top
    overlay.apply_position("centre")
    assert abs(overlay.geometry().center().y() - area.center().y()) <= 1
    with pytest.raises(ValueError, match="position must be one of top, bottom, centre"):
        overlay.apply_position("left")


def test_an_end_of_utterance_starts_a_new_line(overlay: CaptionOverlay) -> None:
    overlay.resize(2000, overlay.height())
    a = [Token(1, " so", 0), Token(2, " that", 80), Token(126, "", 160, True), Token(3, " next", 240)]
    overlay.show_update(
        CaptionUpdate(
            revision=1, text=" so that next", new_text=" so that next", new_tokens=a, utterance_ends=[3]
        )
    )
    assert overlay.visible_lines() == ["so that", "next"] and overlay.newest_words() == ["so", "that", "next"]
    # an end after the last token (Voxtral reports no position): the next words go on a new line
    end = CaptionUpdate(revision=1, text=" so that next", new_text="", new_tokens=[], utterance_ends=[0])
    overlay.show_update(end)
    overlay.show_update(
        CaptionUpdate(2, " so that next one", " one", [Token(4, " one", 320)], ["end_of_utterance"])
    )
    assert overlay.visible_lines() == ["next", "one"] and overlay.newest_words() == ["one"]


def test_transcript_view_puts_each_utterance_on_its_own_line(qtbot) -> None:
    from captionist.ui.transcript_view import TranscriptView

    view = TranscriptView()
    qtbot.addWidget(view)
    toks = [Token(1, " Hello", 0), Token(2, " there.", 80), Token(3, " Next", 160)]
    view.append_update(CaptionUpdate(1, " Hello there. Next", " Hello there. Next", toks, utterance_ends=[2]))
    view.append_update(CaptionUpdate(2, " Hello there. Next one", " one", [Token(4, " one", 240)]))
    view.append_update(CaptionUpdate(2, " Hello there. Next one", "", [], utterance_ends=[0]))
    view.append_update(
        CaptionUpdate(3, " Hello there. Next one two", " two", [Token(5, " two", 320)], final=True)
    )
    assert view.plain_text() == "Hello there.\nNext one\ntwo\n"


def _gap_update(rev: int, start_ms: int, end_ms: int, reason: GapReason) -> CaptionUpdate:
    gap = AudioGap(start_ms, end_ms, reason)
    return CaptionUpdate(revision=rev, text="", new_text="", new_tokens=[], gap=gap)


def test_a_gap_is_one_line_that_keeps_its_length_in_view(overlay: CaptionOverlay) -> None:
    gap = AudioGap(61000, 73000, GapReason.SOURCE_LOST)
    overlay.show_update(_update(1, " before", " before"))
    overlay.show_update(_gap_update(1, 61000, 73000, GapReason.SOURCE_LOST))
    overlay.show_update(_update(2, " before after", " after"))
    # 400 px at 20 px type: the whole mark would wrap over two lines and push its start out of the
    # two visible lines; the short form fits on one
    assert overlay.visible_lines() == [gap.short_label(), "after"]
    overlay.resize(1400, overlay.height())
    assert overlay.visible_lines() == [gap.label(), "after"]
    overlay.settings.font_size = 60
    overlay.apply_settings()
    overlay.resize(200, overlay.height())
    line = overlay.visible_lines()[0]
    assert line.startswith("[12") and line.endswith("…")  # cut short, never wrapped


def test_a_gap_cut_by_the_kept_tail_leaves_no_marker_characters(overlay: CaptionOverlay) -> None:
    overlay.show_update(_gap_update(0, 0, 5000, GapReason.QUEUE_OVERFLOWED))
    long_text = "".join(f" w{i}" for i in range(2000))[: TAIL_CHARS - 20]
    overlay.show_update(_update(1, long_text, long_text))
    overlay.resize(4000, overlay.height())
    overlay.settings.lines = 10
    overlay.apply_settings()
    shown = " ".join(overlay.visible_lines())
    assert GAP_MARK not in shown and GAP_SHORT not in shown and "transcribed" not in shown


def test_a_word_wider_than_the_overlay_is_cut_to_fit(overlay: CaptionOverlay) -> None:
    from PySide6.QtGui import QFontMetricsF

    link = "https://example.org/" + "abcdefghij" * 12
    accented = "e\u0301" * 40  # é as e + combining acute: never split apart
    text = f" see {link} and {accented} end"
    overlay.settings.lines = 10
    overlay.apply_settings()
    overlay.resize(300, overlay.height())
    overlay.show_update(_update(1, text, text))
    lines = overlay.visible_lines()
    metrics = QFontMetricsF(overlay._font())
    width = overlay.width() - 2 * 12
    assert all(metrics.horizontalAdvance(line) <= width for line in lines), lines
    words = [w.text for line in overlay.layout_lines() for w in line]
    shown = "".join(words)  # the tail of the text, every character once, in order
    assert len(shown) > len(accented) + 60 and "".join(text.split()).endswith(shown)
    assert len(words) > 6  # the two long words came in pieces
    assert not any(w.startswith("\u0301") for w in words)
    assert lines[-1].endswith("end")


def test_chinese_wraps_between_characters_with_no_space_and_the_newest_apart(overlay: CaptionOverlay) -> None:
    from PySide6.QtGui import QFontMetricsF

    first = "今天我们来讨论一下这个季度的销售数据，"
    more = "总体来说增长了百分之四。"
    overlay.settings.lines = 8
    overlay.apply_settings()
    overlay.resize(160, overlay.height())  # narrow, whatever the width of the font's characters
    overlay.show_update(_update(1, first, first))
    overlay.show_update(_update(2, first + more, more))
    lines = overlay.visible_lines()
    assert len(lines) > 1 and "".join(lines) == first + more  # broken between characters, no space
    metrics = QFontMetricsF(overlay._font())
    assert all(metrics.horizontalAdvance(line) <= overlay.width() - 2 * 12 for line in lines)
    assert "".join(overlay.newest_words()) == more  # only the characters the update added
    assert not any(line[0] in "，。" for line in lines)


def test_an_arabic_line_is_drawn_from_the_right_in_reading_order(overlay: CaptionOverlay) -> None:
    from PySide6.QtGui import QFontMetricsF

    spoken = " مرحبا بكم في الاجتماع"
    overlay.show_update(_update(1, spoken, spoken))
    assert overlay.visible_lines() == [spoken.strip()]  # the text itself stays in spoken order
    metrics = QFontMetricsF(overlay._font())
    [line] = overlay.layout_lines()
    placed = overlay.placed(line, metrics)
    xs = {word.text: x for x, word in placed}
    words = spoken.split()
    assert all(
        xs[a] > xs[b] for a, b in zip(words, words[1:], strict=False)
    )  # each word left of the one before
    first_x, first = max(placed, key=lambda p: p[0])
    assert first.text == words[0]
    assert abs(first_x + metrics.horizontalAdvance(first.text) - (overlay.width() - 12)) < 1  # right-aligned
    overlay.grab()  # paints (must not raise)


def _utterance(rev: int, words: str) -> CaptionUpdate:
    """An update that says ``words`` and ends the utterance (the next words start a new line)."""
    new = " " + words
    return CaptionUpdate(rev, new, new, [Token(1, new, 0)], utterance_ends=[1])


def test_only_the_utterances_that_reach_the_visible_lines_are_laid_out(
    overlay: CaptionOverlay, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Laying out the whole kept tail on every paint cost 6 ms a paint (bench/bench_long_meeting.py);
    the lines shown come from the last utterances only, so only those are laid out."""
    for i in range(300):
        overlay.show_update(_utterance(i + 1, f"u{i} said"))
    laid_out: list[str] = []
    real = CaptionOverlay._paragraph_lines

    def spy(self: CaptionOverlay, paragraph: str, *args: object) -> list:
        laid_out.append(paragraph)
        return real(self, paragraph, *args)

    monkeypatch.setattr(CaptionOverlay, "_paragraph_lines", spy)
    assert overlay.visible_lines() == ["u298 said", "u299 said"]
    assert [p.strip() for p in laid_out if p] == ["u299 said", "u298 said"]
    assert overlay.newest_words() == ["u299", "said"]


def test_an_utterance_wraps_from_its_start_whatever_came_before(qtbot) -> None:
    """Its lines do not move as later words come, and do not depend on earlier utterances."""
    long = " ".join(f"word{i}" for i in range(30))
    alone = CaptionOverlay(OverlaySettings(lines=10, font_size=20))
    after_others = CaptionOverlay(OverlaySettings(lines=10, font_size=20))
    for ov in (alone, after_others):
        qtbot.addWidget(ov)
        ov.resize(400, ov.height())
    for i in range(50):
        after_others.show_update(_utterance(i + 1, f"earlier{i} text"))
    alone.show_update(_update(1, " " + long, " " + long))
    after_others.show_update(_update(51, " " + long, " " + long))
    lines = alone.visible_lines()
    assert 3 <= len(lines) < 10 and " ".join(lines) == long
    shown = after_others.visible_lines()
    assert shown[-len(lines) :] == lines and shown[0] != lines[0]  # earlier utterances above it
    alone.show_update(_update(2, " " + long + " more", " more"))
    grown = alone.visible_lines()
    assert grown[: len(lines) - 1] == lines[:-1] and grown[len(lines) - 1].startswith(lines[-1])
