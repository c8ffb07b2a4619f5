"""Captions for a screen reader or a braille display: each finished sentence is sent once, in order,
and nothing said is lost or changed on the way."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QWidget

from captionist.engine import Token
from captionist.pipeline.events import AudioGap, CaptionUpdate, GapReason
from captionist.ui import caption_reader as reader_module
from captionist.ui.announce import Urgency
from captionist.ui.caption_reader import CaptionReader
from tests.ui.test_main_window import _run_once


@pytest.fixture
def said(monkeypatch) -> list[str]:
    out: list[str] = []

    def record(widget: QWidget, message: str, urgency: Urgency) -> None:
        assert urgency is Urgency.POLITE  # captions wait for what the screen reader is saying
        out.append(message)

    monkeypatch.setattr(reader_module, "announce", record)
    return out


class _Session:
    def __init__(self) -> None:
        self.revision = 0
        self.text = ""

    def update(self, *pieces: str, ends: list[int] | None = None, final: bool = False) -> CaptionUpdate:
        self.revision += 1
        new = "".join(pieces)
        self.text += new
        tokens = [Token(i, p, 0) for i, p in enumerate(pieces)]
        return CaptionUpdate(self.revision, self.text, new, tokens, utterance_ends=ends or [], final=final)


def _reader(qtbot, on: list[bool] | None = None) -> CaptionReader:
    widget = QWidget()
    qtbot.addWidget(widget)
    flag = on if on is not None else [True]
    return CaptionReader(widget, lambda: flag[0])


def test_a_sentence_is_sent_once_the_next_one_begins(qtbot, said) -> None:
    reader, s = _reader(qtbot), _Session()
    reader.add(s.update(" Hello", " there."))
    assert said == [] and reader.pending() == " Hello there."  # "there." may be "there.5"
    reader.add(s.update(" It", " grew", " 3.", "5", " percent.", " Next"))
    assert said == ["Hello there. It grew 3.5 percent."]
    assert reader.pending() == "Next"


def test_an_end_of_utterance_a_gap_and_the_end_send_what_waits(qtbot, said) -> None:
    reader, s = _reader(qtbot), _Session()
    reader.add(s.update(" okay", " so", " then", ends=[2]))  # the utterance ended after "so"
    assert said == ["okay so"]
    reader.add(CaptionUpdate(s.revision + 1, s.text, "", [], gap=AudioGap(1000, 4000, GapReason.SOURCE_LOST)))
    assert said[1:] == ["then", AudioGap(1000, 4000, GapReason.SOURCE_LOST).label()]
    reader.add(s.update(" bye", final=True))
    assert said[3:] == ["bye"]


def test_words_with_no_sentence_end_are_sent_after_a_pause(qtbot, said, monkeypatch) -> None:
    monkeypatch.setattr(reader_module, "QUIET_MS", 50)
    reader, s = _reader(qtbot), _Session()
    reader.add(s.update(" no", " punctuation", " here"))
    assert said == []
    qtbot.waitUntil(lambda: said == ["no punctuation here"])
    assert reader.pending() == ""
    on = [True]
    reader = _reader(qtbot, on)
    reader.add(s.update(" turned", " off"))
    on[0] = False  # in Preferences, before the pause ran out
    qtbot.waitUntil(lambda: reader.pending() == "")
    assert said == ["no punctuation here"]


def test_a_long_run_without_a_sentence_end_is_cut_between_words(qtbot, said) -> None:
    reader, s = _reader(qtbot), _Session()
    words = [f" word{i}" for i in range(80)]
    reader.add(s.update(*words))
    assert len(said) >= 1 and all(len(m) <= reader_module.MAX_CHARS for m in said)
    assert " ".join([*said, reader.pending()]).split() == [w.strip() for w in words]


def test_chinese_sentences_end_without_a_space(qtbot, said) -> None:
    reader, s = _reader(qtbot), _Session()
    reader.add(s.update("你好。", "我们", "走吧"))
    assert said == ["你好。"] and reader.pending() == "我们走吧"


def test_off_nothing_is_sent_or_kept(qtbot, said) -> None:
    on = [False]
    reader, s = _reader(qtbot, on), _Session()
    reader.add(s.update(" secret", " words."))
    reader.add(s.update(" more", final=True))
    assert said == [] and reader.pending() == ""
    on[0] = True
    reader.add(s.update(" Now", " on.", " Yes", final=True))
    assert said == ["Now on.", "Yes"]


def test_a_session_reaches_the_screen_reader_word_for_word(app_parts, qtbot, said) -> None:
    win, controller, _, fake_sd, want = app_parts
    win.settings.screen_reader_captions = True
    _run_once(win, controller, fake_sd, qtbot)
    assert " ".join(said).split() == want


def test_the_preference_turns_it_on(app_parts, qtbot) -> None:
    win = app_parts[0]
    prefs = win.open_preferences()
    assert not prefs.screen_reader.isChecked() and not win.settings.screen_reader_captions
    prefs.screen_reader.setChecked(True)
    assert win.settings.screen_reader_captions


def test_random_speech_reaches_the_screen_reader_whole_and_in_order(qtbot, said) -> None:
    """Whatever the words, punctuation and ends of utterance, what is sent plus what waits is the
    text, word for word; nothing sent is empty, and the end of the session sends the rest."""
    import random

    rng = random.Random(41)
    vocabulary = [
        "we",
        "3.5",
        "ok.",
        "why?",
        "no!",
        "“quoted.”",
        "你好。",
        "走吧",
        "كيف؟",
        "Dr.",
        "…",
        "x" * 40,
    ]
    for _ in range(20):
        said.clear()
        reader, s = _reader(qtbot), _Session()
        spoken: list[str] = []
        for _ in range(rng.randint(1, 40)):
            pieces = [" " + rng.choice(vocabulary) for _ in range(rng.randint(0, 6))]
            spoken += [p.strip() for p in pieces]
            ends = sorted(rng.sample(range(len(pieces) + 1), k=rng.randint(0, min(2, len(pieces) + 1))))
            reader.add(s.update(*pieces, ends=ends))
            assert " ".join([*said, reader.pending()]).split() == spoken
        reader.add(s.update(final=True))
        assert " ".join(said).split() == spoken and reader.pending() == ""
        assert all(m.strip() for m in said)
