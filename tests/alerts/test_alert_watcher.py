"""Keyword hits from a session's committed tokens: once each, whole words, across updates."""

from __future__ import annotations

from captionist.alerts.keywords import KeywordList
from captionist.alerts.watcher import AlertWatcher
from captionist.feed.events import FeedEventType, caption_events
from tests.fakes.caption_updates import UpdateMaker


def test_a_word_counts_once_it_is_complete_even_across_updates() -> None:
    watcher, u = AlertWatcher(KeywordList.parse(["alice"])), UpdateMaker()
    watcher.begin_session()
    assert watcher.feed(u.make([" hello", " Al"])) == []
    assert watcher.feed(u.make(["ice"])) == []  # could still become "Alicen"
    [hit] = watcher.feed(u.make([",", " how"]))
    assert (hit.keyword, hit.text, hit.first_token, hit.last_token) == ("alice", "Alice,", 1, 3)
    assert hit.time_ms == 160  # the second token's time: where the word began
    assert hit.feed_data()["tokens"] == [1, 2, 3]


def test_a_longer_word_is_not_a_hit_and_ends_finals_and_gaps_complete_words() -> None:
    watcher, u = AlertWatcher(KeywordList.parse(["two", "start"])), UpdateMaker()
    assert watcher.feed(u.make([" two", "nty", " one"])) == []
    assert [h.keyword for h in watcher.feed(u.make([" two"], ends=[1]))] == ["two"]  # an utterance end
    assert [h.keyword for h in watcher.feed(u.make([" start"]))] == []
    assert [h.keyword for h in watcher.feed(u.gap(1000, 2000))] == ["start"]  # a gap ends the word
    assert [h.keyword for h in watcher.feed(u.make([" two"], final=True))] == ["two"]


def test_phrases_match_across_updates_but_not_across_an_utterance_end_or_a_gap() -> None:
    watcher, u = AlertWatcher(KeywordList.parse(["hello world"])), UpdateMaker()
    watcher.feed(u.make([" hello"]))
    assert [h.text for h in watcher.feed(u.make([" world", " again"]))] == ["hello world"]
    watcher.feed(u.make([" hello"], ends=[1]))
    assert watcher.feed(u.make([" world", " x"])) == []
    watcher.feed(u.make([" hello"]))
    watcher.feed(u.gap(0, 100))
    assert watcher.feed(u.make([" world", " x"])) == []


def test_every_occurrence_counts_and_indices_are_the_feeds() -> None:
    keywords = KeywordList.parse(["down", "world no"])
    watcher, u = AlertWatcher(keywords), UpdateMaker()
    updates = [
        u.make([" left", " down", "<c>", " world"], control=(2,)),
        u.make([" no", " down", " yes"], final=True),
    ]
    hits = [h for up in updates for h in watcher.feed(up)]
    assert [h.keyword for h in hits] == ["down", "world no", "down"]
    index = 0
    sent: dict[int, str] = {}
    for up in updates:
        for kind, data in caption_events(up, index):
            if kind is FeedEventType.TOKENS:
                for t in data["tokens"]:
                    sent[t["index"]] = t["text"]
                index += len(data["tokens"])
    for hit in hits:
        assert "".join(sent[k] for k in range(hit.first_token, hit.last_token + 1)).strip() == hit.text


def test_begin_session_forgets_the_last_sessions_words_and_no_keywords_means_no_hits() -> None:
    watcher, u = AlertWatcher(KeywordList.parse(["hello world"])), UpdateMaker()
    watcher.feed(u.make([" hello"]))
    watcher.begin_session()
    assert watcher.feed(u.make([" world"], final=True)) == []
    empty = AlertWatcher()
    assert empty.feed(u.make([" anything"], final=True)) == []
    empty.set_keywords(KeywordList.parse(["anything"]))
    assert [h.keyword for h in empty.feed(u.make([" anything"], final=True))] == ["anything"]


def test_any_whitespace_inside_a_piece_ends_a_word() -> None:
    watcher, u = AlertWatcher(KeywordList.parse(["alice", "bob"])), UpdateMaker()
    hits = watcher.feed(u.make([" alice\tbob", "\nalice"], final=True))
    assert [(h.keyword, h.first_token, h.last_token) for h in hits] == [
        ("alice", 0, 0),
        ("bob", 0, 0),
        ("alice", 1, 1),
    ]


def test_a_chinese_keyword_is_found_inside_a_run_without_spaces() -> None:
    """Chinese marks no word boundaries: each character is a word, so "预算" matches in "和预算安排"
    once the next character shows it is complete, whether the model sends characters or runs."""
    watcher, u = AlertWatcher(KeywordList.parse(["预算", "市场部"])), UpdateMaker()
    assert watcher.feed(u.make(["推广计划", "和预"])) == []
    assert watcher.feed(u.make(["算"])) == []  # could still be followed by more of a keyword
    [hit] = watcher.feed(u.make(["安排。"]))
    assert (hit.keyword, hit.text, hit.first_token, hit.last_token) == ("预算", "预算", 1, 2)
    [hit] = watcher.feed(u.make(["请市场", "部的同事"], final=True))
    assert (hit.text, hit.first_token, hit.last_token) == ("市场部", 4, 5)
    assert watcher.feed(u.make(["预", "测"], final=True)) == []  # "预测" is not "预算"


def test_latin_keywords_still_match_whole_words_beside_chinese() -> None:
    watcher, u = AlertWatcher(KeywordList.parse(["GPU"])), UpdateMaker()
    assert [h.text for h in watcher.feed(u.make(["使用", "GPU", "加速"], final=True))] == ["GPU"]
    assert watcher.feed(u.make([" GPUs"], final=True)) == []
