from __future__ import annotations

import random

import pytest

from captionist.engine import Token
from captionist.transcript import (
    UTTERANCE_END,
    Caption,
    segment_tokens,
    split_finished,
    with_utterance_ends,
    wrap_text,
)
from captionist.transcript.segment import UtteranceEnd, caption_of, ends_sentence, sentence_starts
from captionist.transcript.unspaced import width
from tests.transcript.tokens import TOKEN_MS, pads, text_of, words


def test_times_are_first_token_to_last_token_end() -> None:
    caps = segment_tokens(words("one two three", start_ms=400), token_ms=TOKEN_MS)
    assert caps == [Caption(400, 400 + 3 * TOKEN_MS, "one two three")]


def test_pause_at_threshold_splits_and_just_below_does_not() -> None:
    a = words("hello there", start_ms=0)  # last token at 80 ms, ends at 160 ms
    at = words("again", start_ms=160 + 800, first_id=2000)
    below = words("again", start_ms=160 + 800 - TOKEN_MS, first_id=2000)
    assert [c.text for c in segment_tokens(a + at, token_ms=TOKEN_MS)] == ["hello there", "again"]
    assert [c.text for c in segment_tokens(a + below, token_ms=TOKEN_MS)] == ["hello there again"]
    assert [c.text for c in segment_tokens(a + below, pause_ms=400, token_ms=TOKEN_MS)] == [
        "hello there",
        "again",
    ]


def test_control_tokens_give_no_text_and_do_not_bridge_a_pause() -> None:
    a = words("before the pause")
    b = words("after it", start_ms=2000, first_id=2000)
    caps = segment_tokens(a + pads(240, 2000) + b, token_ms=TOKEN_MS)
    assert [c.text for c in caps] == ["before the pause", "after it"]
    assert caps[1].start_ms == 2000


def test_sentence_end_starts_a_new_caption() -> None:
    caps = segment_tokens(words("Hello world. How are you? Fine!"), token_ms=TOKEN_MS)
    assert [c.text for c in caps] == ["Hello world.", "How are you?", "Fine!"]


def test_sentence_end_inside_a_word_does_not_split() -> None:
    toks = [Token(1, " costs", 0), Token(2, " 3.", 80), Token(3, "5", 160), Token(4, " euros", 240)]
    assert [c.text for c in segment_tokens(toks, token_ms=TOKEN_MS)] == ["costs 3.5 euros"]


def test_sentence_end_before_closing_quote() -> None:
    caps = segment_tokens(words('He said "stop." Then left.'), token_ms=TOKEN_MS)
    assert [c.text for c in caps] == ['He said "stop."', "Then left."]
    assert ends_sentence("fin.»") and ends_sentence(" 終わり。") and not ends_sentence(" Mr")


@pytest.mark.parametrize(
    ("text", "starts"),
    [
        ("Hello there. How are you? Fine", ["How are you? Fine", "Fine"]),
        ("It grew 3.5 percent.", []),  # a decimal point, and an end with no word after it yet
        ("Yes.  ", []),
        ('He said "stop." Then left', ["Then left"]),
        ("Wait... what", ["what"]),
        ("你好。我们走吧", ["我们走吧"]),  # Chinese: no space after the full stop
        ("كيف حالك؟ بخير", ["بخير"]),
    ],
)
def test_sentence_starts_wait_for_the_next_word(text: str, starts: list[str]) -> None:
    assert [text[i:] for i in sentence_starts(text)] == starts


def test_long_text_wraps_into_captions_within_limits() -> None:
    text = (
        "the quick brown fox jumps over the lazy dog while seven wizards quietly hex "
        "a jovial bumpkin and the band plays on until morning comes around again"
    )
    for max_chars, max_lines in [(42, 2), (20, 1), (16, 3)]:
        caps = segment_tokens(words(text), max_chars=max_chars, max_lines=max_lines, token_ms=TOKEN_MS)
        assert len(caps) > 1
        for c in caps:
            lines = c.text.split("\n")
            assert 1 <= len(lines) <= max_lines
            assert all(0 < len(line) <= max_chars for line in lines)
        assert text_of(caps) == text.split()
        # greedy: each caption (but the last) could not take the next caption's first word
        for c, nxt in zip(caps, caps[1:], strict=False):
            longer = c.one_line + " " + nxt.text.split()[0]
            assert len(wrap_text(longer, max_chars)) > max_lines


def test_a_word_made_of_several_tokens_moves_whole_to_the_next_caption() -> None:
    toks = words("aaaa bbbb")  # 9 chars
    toks += [Token(5, " extra", 160), Token(6, "ordin", 240), Token(7, "ary", 320)]
    caps = segment_tokens(toks, max_chars=15, max_lines=1, token_ms=TOKEN_MS)
    assert [c.text for c in caps] == ["aaaa bbbb", "extraordinary"]
    assert caps[1].start_ms == 160 and caps[1].end_ms == 400


def test_a_word_longer_than_a_caption_is_split_without_losing_text() -> None:
    pieces = [" supercali", "fragilist", "icexpiali", "docious"]
    toks = [Token(i, p, i * TOKEN_MS) for i, p in enumerate(pieces)]
    caps = segment_tokens(toks, max_chars=12, max_lines=1, token_ms=TOKEN_MS)
    assert [c.text for c in caps] == ["supercali", "fragilist", "icexpiali", "docious"]
    caps = segment_tokens(
        words("tiny") + [Token(9, " abcdefghij", 80), Token(10, "klmnop", 160)],
        max_chars=8,
        max_lines=1,
        token_ms=TOKEN_MS,
    )
    assert [c.text for c in caps] == ["tiny", "abcdefgh\nij", "klmnop"]


def test_utf8_lengths_count_characters_not_bytes() -> None:
    word = "é" * 9  # 9 characters, 18 bytes
    caps = segment_tokens(words(f"{word} çà"), max_chars=12, max_lines=1, token_ms=TOKEN_MS)
    assert [c.text for c in caps] == [f"{word} çà"]
    cjk = [Token(i, p, i * TOKEN_MS) for i, p in enumerate([" 今日は", "いい", "天気", "ですね。", "散歩"])]
    caps = segment_tokens(cjk, max_chars=6, max_lines=2, token_ms=TOKEN_MS)
    assert "".join(c.text.replace("\n", "") for c in caps) == "今日はいい天気ですね。散歩"
    assert all(width(line) <= 6 for c in caps for line in c.text.split("\n"))  # wide: 3 a line


def test_empty_and_control_only_input_gives_no_captions() -> None:
    assert segment_tokens([], token_ms=TOKEN_MS) == []
    assert segment_tokens(pads(0, 800), token_ms=TOKEN_MS) == []
    assert segment_tokens([Token(1, " ", 0), Token(2, "  ", 80)], token_ms=TOKEN_MS) == []


def test_bad_limits_are_rejected() -> None:
    with pytest.raises(ValueError, match="max_chars"):
        segment_tokens(words("a b"), max_chars=0, token_ms=TOKEN_MS)
    with pytest.raises(ValueError, match="max_lines"):
        segment_tokens(words("a b"), max_lines=0, token_ms=TOKEN_MS)


def test_wrap_text() -> None:
    assert wrap_text("a  bb\nccc dddd", 6) == ["a bb", "ccc", "dddd"]
    assert wrap_text("abcdefgh", 3) == ["abc", "def", "gh"]
    assert wrap_text("", 5) == []


def _random_stream(rng: random.Random, n: int, utterances: bool = False) -> list[Token | UtteranceEnd]:
    vocab = ["the", "cat", "sat.", "on", "a", "mat!", "extra", "ordinary", "why?", "ça", "日本"]
    toks: list[Token | UtteranceEnd] = []
    t = 0
    for i in range(n):
        paused = rng.random() < 0.15
        if paused:
            for _ in range(rng.randint(1, 20)):
                toks.append(Token(32, "", t, True))
                t += TOKEN_MS
        if utterances and rng.random() < 0.1:
            toks.append(UTTERANCE_END)
        piece = rng.choice(vocab)
        glued = not paused and rng.random() < 0.2  # a word continued by a second piece
        toks.append(Token(1000 + i, piece if glued else " " + piece, t))
        t += TOKEN_MS
    return toks


@pytest.mark.parametrize("utterances", [False, True])
@pytest.mark.parametrize("seed", range(8))
def test_segmenting_incrementally_equals_segmenting_whole(seed: int, utterances: bool) -> None:
    rng = random.Random(seed)
    toks = _random_stream(rng, 300, utterances)
    whole = segment_tokens(toks, max_chars=20, max_lines=2, token_ms=TOKEN_MS)
    pending: list[Token | UtteranceEnd] = []
    out: list[Caption] = []
    clock = 0
    i = 0
    while i < len(toks):
        batch = toks[i : i + rng.randint(1, 6)]
        i += len(batch)
        clock = max(clock, *(t.time_ms for t in batch if isinstance(t, Token)), 0)
        pending += [t for t in batch if not isinstance(t, Token) or not t.is_control]
        groups, pending = split_finished(pending, clock, max_chars=20, max_lines=2, token_ms=TOKEN_MS)
        out += [caption_of(g, max_chars=20, token_ms=TOKEN_MS) for g in groups]
    out += segment_tokens(pending, max_chars=20, max_lines=2, token_ms=TOKEN_MS)
    assert out == whole
    assert [c.starts_utterance for c in out] == [c.starts_utterance for c in whole]
    assert any(c.starts_utterance for c in whole) == utterances
    no_space = "".join("".join(c.text.split()) for c in whole)
    pieces = "".join(t.piece for t in toks if isinstance(t, Token))
    assert no_space == "".join(pieces.split())


def test_an_end_of_utterance_starts_a_new_caption_and_marks_it() -> None:
    toks = words("good morning everyone") + words("hello", start_ms=240, first_id=2000)
    caps = segment_tokens(with_utterance_ends(toks, [3]), token_ms=TOKEN_MS)
    assert [c.text for c in caps] == ["good morning everyone", "hello"]
    assert [c.starts_utterance for c in caps] == [False, True]
    assert caps[0].end_ms == 240 and caps[1].start_ms == 240  # no pause needed
    assert [c.text for c in segment_tokens(toks, token_ms=TOKEN_MS)] == ["good morning everyone hello"]
    # an end after the last token finishes the open caption at once, and the next one opens an utterance
    groups, rest = split_finished(with_utterance_ends(toks[:3], [3]), 0, token_ms=TOKEN_MS)
    assert [g.tokens for g in groups] == [toks[:3]] and rest == [UTTERANCE_END]
    groups, rest = split_finished(rest + toks[3:], 0, token_ms=TOKEN_MS)
    assert groups == [] and rest == [UTTERANCE_END, *toks[3:]]


def test_utterance_end_positions_follow_transcript_events() -> None:
    toks = words("a b c")
    assert with_utterance_ends(toks, [0, 2, 2, 3]) == [
        UTTERANCE_END,
        toks[0],
        toks[1],
        UTTERANCE_END,
        toks[2],
        UTTERANCE_END,
    ]
    assert with_utterance_ends(toks, []) == toks


def test_the_token_duration_comes_from_the_caller() -> None:
    toks = words("one") + words("two", start_ms=1000, first_id=9)
    assert [c.text for c in segment_tokens(toks, token_ms=80)] == ["one", "two"]  # 920 ms of silence
    assert [c.text for c in segment_tokens(toks, token_ms=240)] == ["one two"]  # 760 ms
    assert segment_tokens(toks[:1], token_ms=240)[0].end_ms == 240
    with pytest.raises(ValueError, match="token_ms"):
        segment_tokens(toks, token_ms=0)


def test_split_finished_closes_the_last_caption_after_a_pause_of_clock_time() -> None:
    toks = words("still talking")  # ends at 160 ms
    assert split_finished(toks, 160 + 799, token_ms=TOKEN_MS) == ([], toks)
    groups, rest = split_finished(toks, 160 + 800, token_ms=TOKEN_MS)
    assert [g.tokens for g in groups] == [toks] and rest == []


def test_arabic_and_hindi_sentence_ends_start_a_new_caption() -> None:
    ar = segment_tokens(words("كيف حالك؟ أنا بخير."), token_ms=TOKEN_MS)
    assert [c.text for c in ar] == ["كيف حالك؟", "أنا بخير."]
    hi = segment_tokens(words("नमस्ते दोस्तों। आज बैठक है।"), token_ms=TOKEN_MS)
    assert [c.text for c in hi] == ["नमस्ते दोस्तों।", "आज बैठक है।"]
