"""Chinese and Japanese captions: lines break between characters (never before closing
punctuation), wide characters count two columns, and no space is ever put into such text."""

from __future__ import annotations

import random

import pytest

from captionist.engine import Token
from captionist.transcript import render, segment_tokens, split_finished, wrap_text
from captionist.transcript.segment import caption_of
from captionist.transcript.unspaced import (
    NO_LINE_END,
    NO_LINE_START,
    join,
    join_lines,
    may_break,
    pieces,
    separator,
    width,
)
from tests.transcript.tokens import TOKEN_MS

ZH = (
    "大家早上好。今天我们来讨论一下这个季度的销售数据，总体来说增长了百分之四。"
    "接下来请市场部的同事介绍一下新产品的推广计划和预算安排。"
)
JA = "今日はいい天気ですね。ちょっと散歩に行きませんか？「ショッピングモール」まで歩きましょう。"
KO = "안녕하세요 여러분 오늘은 이번 분기의 판매 실적에 대해 이야기하겠습니다"


def chars(text: str, start_ms: int = 0) -> list[Token]:
    """One token per character, as a model writing Chinese emits them (no leading spaces)."""
    return [Token(1000 + i, ch, start_ms + i * TOKEN_MS) for i, ch in enumerate(text)]


def test_where_lines_may_break() -> None:
    assert may_break("市", "场") and may_break("好", "今") and may_break("a", "大") and may_break("大", "a")
    assert not may_break("好", "。") and not may_break("ち", "ょ") and not may_break("「", "シ")
    assert not may_break("a", "b") and not may_break("안", "녕")  # English and Korean break at spaces
    assert pieces("大家好。") == ["大", "家", "好。"] and pieces("hello") == ["hello"] and pieces("") == []
    assert pieces("「你好」世界") == ["「你", "好」", "世", "界"]


def test_wide_characters_take_two_columns() -> None:
    assert width("abc") == 3 and width("大家好") == 6 and width("안녕") == 4 and width("ＡＢ") == 4
    assert width("e\u0301") == 1  # a combining accent takes no column


def test_joining_puts_no_space_into_unspaced_text() -> None:
    assert join("今天", "开会") == "今天开会" and join("good", "morning") == "good morning"
    assert join("使用", "GPU") == "使用GPU" and join("", "x") == "x" and separator("a", "") == ""
    assert join_lines("总体\n来说") == "总体来说" and join_lines("two\nlines") == "two lines"


@pytest.mark.parametrize("text", [ZH, JA], ids=["Chinese", "Japanese"])
@pytest.mark.parametrize("max_chars", [8, 21, 42])
def test_wrapping_keeps_every_character_and_the_rules(text: str, max_chars: int) -> None:
    lines = wrap_text(text, max_chars)
    assert "".join(lines) == text  # nothing lost, nothing added
    assert all(width(line) <= max_chars for line in lines)
    assert not any(line[0] in NO_LINE_START for line in lines)
    assert not any(line[-1] in NO_LINE_END for line in lines)
    assert all(width(a + pieces(b)[0]) > max_chars for a, b in zip(lines, lines[1:], strict=False))  # greedy


def test_korean_breaks_at_spaces_and_counts_wide() -> None:
    lines = wrap_text(KO, 42)
    assert " ".join(lines) == KO and all(width(line) <= 42 for line in lines) and len(lines) == 2


def test_chinese_captions_start_at_sentence_ends_and_read_back_unchanged() -> None:
    caps = segment_tokens(chars(ZH), token_ms=TOKEN_MS)
    assert [c.one_line for c in caps] == [s + "。" for s in ZH.split("。") if s]
    assert all(width(line) <= 42 for c in caps for line in c.text.split("\n"))
    assert render("txt", caps).strip() == ZH  # no space put between characters or sentences
    assert render("json", caps).count(ZH) == 1
    for fmt in ("srt", "vtt"):  # the cues' lines hold the text, broken only between characters
        body = render(fmt, caps)
        assert "".join(line for line in body.split("\n") if any(ch in ZH for ch in line)) == ZH


def test_a_japanese_caption_never_starts_a_line_with_small_kana_or_a_closer() -> None:
    caps = segment_tokens(chars(JA), max_chars=10, max_lines=2, token_ms=TOKEN_MS)
    lines = [line for c in caps for line in c.text.split("\n")]
    assert "".join(lines) == JA
    assert not any(line[0] in NO_LINE_START or line[-1] in NO_LINE_END for line in lines)


@pytest.mark.parametrize("seed", range(6))
def test_segmenting_chinese_incrementally_equals_segmenting_whole(seed: int) -> None:
    rng = random.Random(seed)
    vocab = ["我们", "今天", "讨论", "数据。", "好的，", "GPU", "的", "「计划」", "吗？", " okay"]
    toks, t = [], 0
    for i in range(300):
        if rng.random() < 0.1:
            t += rng.randint(2, 20) * TOKEN_MS  # a pause
        toks.append(Token(1000 + i, rng.choice(vocab), t))
        t += TOKEN_MS
    whole = segment_tokens(toks, max_chars=20, max_lines=2, token_ms=TOKEN_MS)
    out, pending, i = [], [], 0
    while i < len(toks):
        batch = toks[i : i + rng.randint(1, 6)]
        i += len(batch)
        pending += batch
        groups, pending = split_finished(
            pending, batch[-1].time_ms, max_chars=20, max_lines=2, token_ms=TOKEN_MS
        )
        out += [caption_of(g, max_chars=20, token_ms=TOKEN_MS) for g in groups]
    out += segment_tokens(pending, max_chars=20, max_lines=2, token_ms=TOKEN_MS)
    assert out == whole
    assert "".join("".join(c.text.split()) for c in whole) == "".join("".join(t.piece for t in toks).split())


def test_a_closing_quote_in_a_token_of_its_own_keeps_the_sentence_ended() -> None:
    toks = [Token(i, p, i * TOKEN_MS) for i, p in enumerate(["「行", "きましょう", "。", "」", "はい", "。"])]
    assert [c.text for c in segment_tokens(toks, token_ms=TOKEN_MS)] == ["「行きましょう。」", "はい。"]
    english = [Token(i, p, i * TOKEN_MS) for i, p in enumerate([' "Stop', ".", '"', " Then", " go."])]
    assert [c.text for c in segment_tokens(english, token_ms=TOKEN_MS)] == ['"Stop."', "Then go."]
