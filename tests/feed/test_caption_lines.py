from __future__ import annotations

from captionist.feed.caption_lines import KEEP_LINES, CaptionLines


def test_lines_follow_utterances_and_wrap_at_word_boundaries() -> None:
    lines = CaptionLines()
    assert lines.current() == []
    lines.add_text(" hello world,")
    lines.add_text(" one two three")
    assert lines.current(2, 42) == ["hello world, one two three"]
    lines.new_line()
    lines.new_line()  # an empty line is not a line
    lines.add_text(" next")
    assert lines.current(3, 42) == ["hello world, one two three", "next"]
    assert lines.current(2, 12) == ["three", "next"]  # the first line wraps into three
    assert lines.current(1, 42) == ["next"]


def test_a_gap_label_is_a_line_of_its_own_and_only_the_last_lines_are_kept() -> None:
    lines = CaptionLines()
    lines.add_text(" before")
    lines.add_line("[2.0 s of audio not transcribed: transcription fell behind]")
    lines.add_text(" after")
    assert lines.current(3, 100) == [
        "before",
        "[2.0 s of audio not transcribed: transcription fell behind]",
        "after",
    ]
    for i in range(KEEP_LINES + 10):
        lines.add_text(f" line {i}")
        lines.new_line()
    assert len(lines.current(1000, 100)) == KEEP_LINES
    assert lines.current(1, 100) == [f"line {KEEP_LINES + 9}"]


def test_a_word_longer_than_the_width_is_cut() -> None:
    lines = CaptionLines()
    lines.add_text(" " + "x" * 20)
    assert lines.current(5, 8) == ["x" * 8, "x" * 8, "x" * 4]


def test_chinese_wraps_between_characters_at_half_as_many_characters() -> None:
    lines = CaptionLines()
    text = "今天我们来讨论一下这个季度的销售数据，总体来说增长了百分之四。"
    lines.add_text(text)
    shown = lines.current(4, 20)
    assert "".join(shown) == text  # no space put in, nothing lost
    # 20 columns: 10 wide characters a line; "，" and "。" never start one
    assert shown == ["今天我们来讨论一下这", "个季度的销售数据，总", "体来说增长了百分之", "四。"]
