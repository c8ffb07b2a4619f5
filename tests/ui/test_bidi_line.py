"""Word order on screen for right-to-left lines (UAX #9 at the level of words)."""

from __future__ import annotations

import pytest

from captionist.ui.bidi_line import Direction, direction_of, line_is_rtl, visual_order

AR = ["مرحبا", "بكم", "في", "الاجتماع"]  # "welcome to the meeting", as spoken


def on_screen(words: list[str]) -> list[str]:
    return [words[i] for i in visual_order(words)]


def test_the_directions_of_words() -> None:
    assert direction_of("hello") is Direction.LTR and direction_of("مرحبا") is Direction.RTL
    assert direction_of("שלום,") is Direction.RTL and direction_of("(2026)") is Direction.NUMBER
    assert direction_of("٢٠٢٦") is Direction.NUMBER and direction_of("—") is Direction.NEUTRAL


def test_an_arabic_line_reads_from_the_right() -> None:
    assert line_is_rtl(AR) and on_screen(AR) == list(reversed(AR))


def test_english_is_left_as_it_is() -> None:
    words = ["hello", "world,", "2026", "!"]
    assert not line_is_rtl(words) and visual_order(words) == [0, 1, 2, 3]
    assert visual_order([]) == []


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        (["he", "said", "שלום", "עולם", "today"], ["he", "said", "עולם", "שלום", "today"]),
        (["مرحبا", "بكم", "في", "Captionist", "2026"], ["Captionist", "2026", "في", "بكم", "مرحبا"]),
        (["السعر", "25", "دولار"], ["دولار", "25", "السعر"]),  # a number inside Arabic stays in place
        (["السعر", "10", "20"], ["20", "10", "السعر"]),  # numbers apart by a space are two runs
        (["he", "said", "שלום", "10", "20"], ["he", "said", "20", "10", "שלום"]),  # in an English line
        (["قال", "hello", "world", "ثم"], ["ثم", "hello", "world", "قال"]),  # English runs stay LTR
        (["قال", "-", "ثم"], ["ثم", "-", "قال"]),  # a dash between Arabic words is Arabic
        (["one", "-", "ثم"], ["one", "-", "ثم"]),  # sides disagree: the line's direction
    ],
)
def test_mixed_lines(words: list[str], expected: list[str]) -> None:
    assert on_screen(words) == expected
