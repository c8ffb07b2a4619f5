from __future__ import annotations

import json

import pytest

from captionist.transcript import FORMATS, Caption, check_format, parse, render, segment_tokens
from captionist.transcript.render import PARAGRAPH_GAP_MS
from captionist.transcript.timecode import format_clock, format_timestamp, parse_timestamp
from tests.transcript.tokens import TOKEN_MS, words

CAPTIONS = [
    Caption(0, 1480, "Bonjour à tous,\nça va très bien."),
    Caption(1600, 2400, "Fish & chips <3 --> tasty"),
    Caption(5000, 6320, "日本語のテキスト。"),
    Caption(3_725_042, 3_727_000, "past one hour"),
    Caption(360_000_000, 360_000_080, "a hundred hours in"),
]


@pytest.mark.parametrize("fmt", ["srt", "vtt", "json"])
def test_render_then_parse_gives_the_same_captions(fmt: str) -> None:
    assert parse(fmt, render(fmt, CAPTIONS, meta={"model": "m.gguf", "delay_ms": 480})) == CAPTIONS


def test_timestamped_txt_parses_back_with_line_breaks_as_spaces() -> None:
    out = parse("txt", render("txt", CAPTIONS, timestamps=True))
    assert out == [Caption(c.start_ms, c.end_ms, c.one_line) for c in CAPTIONS]


def test_segmented_captions_round_trip() -> None:
    caps = segment_tokens(
        words("one two three. " * 20) + words("later on", start_ms=60_000, first_id=5), token_ms=TOKEN_MS
    )
    assert len(caps) > 2
    for fmt in ("srt", "vtt", "json"):
        assert parse(fmt, render(fmt, caps)) == caps


def test_srt_layout() -> None:
    srt = render("srt", CAPTIONS[:2])
    assert srt.startswith("1\n00:00:00,000 --> 00:00:01,480\nBonjour à tous,\nça va très bien.\n\n2\n")
    assert "00:00:01,600 --> 00:00:02,400\nFish & chips <3 --> tasty\n" in srt


def test_vtt_layout_escapes_and_notes_meta() -> None:
    vtt = render("vtt", CAPTIONS[:2], meta={"model": "m.gguf"})
    assert vtt.startswith("WEBVTT\n\nNOTE\nmodel: m.gguf\n\n00:00:00.000 --> 00:00:01.480\n")
    assert "Fish &amp; chips &lt;3 --&gt; tasty" in vtt


def test_json_has_meta_text_and_captions() -> None:
    doc = json.loads(render("json", CAPTIONS[:2], meta={"model": "m.gguf", "delay_ms": 480}))
    assert doc["model"] == "m.gguf" and doc["delay_ms"] == 480
    assert doc["text"] == "Bonjour à tous, ça va très bien. Fish & chips <3 --> tasty"
    assert doc["captions"][1] == {"start_ms": 1600, "end_ms": 2400, "text": "Fish & chips <3 --> tasty"}


def test_plain_txt_makes_paragraphs_at_long_gaps() -> None:
    caps = [
        Caption(0, 500, "first"),
        Caption(600, 900, "second\nline"),
        Caption(900 + PARAGRAPH_GAP_MS, 4000, "third"),
    ]
    assert render("txt", caps) == "first second line\n\nthird\n"
    assert render("txt", []) == ""


def test_markdown_has_title_meta_and_every_caption() -> None:
    md = render("md", CAPTIONS, timestamps=True, meta={"title": "Standup", "model": "m.gguf"})
    assert md.startswith("# Standup\n\n- **model:** m.gguf\n\n**[00:00]** Bonjour à tous, ça va très bien.\n")
    assert "**[1:02:05]** past one hour" in md
    for c in CAPTIONS:
        assert c.one_line in md
    with pytest.raises(ValueError, match="md transcripts cannot be parsed"):
        parse("md", md)


def test_every_format_renders_every_caption_text() -> None:
    for fmt in FORMATS:
        out = render(fmt, CAPTIONS, timestamps=True)
        assert "past one hour" in out and "日本語のテキスト。" in out, fmt


def test_parse_tolerates_bom_crlf_cue_ids_and_settings() -> None:
    srt = "\ufeff1\r\n00:00:01,000 --> 00:00:02,500\r\nHi\r\n\r\n"
    srt += "2\r\n00:00:03,000 --> 00:00:04,000\r\nthere\r\n"
    assert parse("srt", srt) == [Caption(1000, 2500, "Hi"), Caption(3000, 4000, "there")]
    vtt = "WEBVTT - title\n\nNOTE a comment\n\ncue-1\n00:01.000 --> 00:02.000 align:start\nA &amp; B\n"
    assert parse("vtt", vtt) == [Caption(1000, 2000, "A & B")]


@pytest.mark.parametrize(
    ("fmt", "text", "message"),
    [
        ("srt", "1\n00:00:01,000 -> 00:00:02,000\nhi\n", "srt cue 1"),
        ("srt", "1\n00:00:xx,000 --> 00:00:02,000\nhi\n", "not a timestamp"),
        ("srt", "1\n00:00:05,000 --> 00:00:02,000\nhi\n", "start <= end"),
        ("vtt", "00:01.000 --> 00:02.000\nhi\n", "WEBVTT"),
        ("json", "{not json", "not valid JSON"),
        ("json", '{"text": "no captions"}', "no 'captions'"),
        ("json", '{"captions": [{"start_ms": 1}]}', "caption 1 is malformed"),
        ("txt", "just words without times\n", "txt line 1"),
        ("docx", "", "unknown transcript format"),
    ],
)
def test_malformed_input_gives_a_clear_error(fmt: str, text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse(fmt, text)


def test_timecodes() -> None:
    assert format_timestamp(3_725_042, ",") == "01:02:05,042"
    assert format_timestamp(360_000_000) == "100:00:00.000"
    assert parse_timestamp("01:02:05,042") == 3_725_042
    assert parse_timestamp("02:05.042") == 125_042
    assert format_clock(65_999) == "01:05" and format_clock(3_725_042) == "1:02:05"
    with pytest.raises(ValueError):
        format_timestamp(-1)


def test_check_format() -> None:
    assert check_format(".SRT") == "srt"
    with pytest.raises(ValueError, match="choose one of txt, srt, vtt, json, md"):
        check_format("doc")


def test_a_caption_that_starts_an_utterance_goes_on_a_new_line_in_plain_text() -> None:
    caps = [
        Caption(0, 400, "first one"),
        Caption(400, 800, "second one", starts_utterance=True),
        Caption(800, 1200, "same line"),
        Caption(1200 + PARAGRAPH_GAP_MS, 4000, "after a pause", starts_utterance=True),
    ]
    assert render("txt", caps) == "first one\nsecond one same line\n\nafter a pause\n"
    assert render("md", caps).endswith("first one\n\nsecond one same line\n\nafter a pause\n")
    srt = render("srt", caps)
    assert parse("srt", srt) == caps and srt.count("-->") == 4  # a cue each; times unchanged
