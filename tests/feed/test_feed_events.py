"""What one CaptionUpdate becomes on the caption feed."""

from __future__ import annotations

from captionist.feed.events import FeedEventType, caption_events
from tests.fakes.caption_updates import UpdateMaker


def test_tokens_split_where_utterances_end_and_numbered_across_the_session() -> None:
    u = UpdateMaker()
    events = list(caption_events(u.make([" hello", " world", " one", " two"], ends=[2]), first_index=5))
    assert [k for k, _ in events] == [FeedEventType.TOKENS, FeedEventType.UTTERANCE_END, FeedEventType.TOKENS]
    assert [t["text"] for t in events[0][1]["tokens"]] == [" hello", " world"]
    assert [t["index"] for t in events[0][1]["tokens"] + events[2][1]["tokens"]] == [5, 6, 7, 8]
    assert events[1][1]["time_ms"] == events[0][1]["tokens"][-1]["time_ms"]
    assert all(d["revision"] == 1 for k, d in events if k is FeedEventType.TOKENS)


def test_control_tokens_are_not_sent_and_do_not_take_an_index() -> None:
    u = UpdateMaker()
    events = list(caption_events(u.make([" a", "<eou>", " b"], control=(1,), ends=[2]), first_index=0))
    kinds = [k for k, _ in events]
    assert kinds == [FeedEventType.TOKENS, FeedEventType.UTTERANCE_END, FeedEventType.TOKENS]
    assert [t["index"] for t in events[0][1]["tokens"] + events[2][1]["tokens"]] == [0, 1]


def test_an_end_after_every_token_and_repeated_ends_count_once() -> None:
    u = UpdateMaker()
    events = list(caption_events(u.make([" a"], ends=[1, 1]), first_index=0))
    assert [k for k, _ in events] == [FeedEventType.TOKENS, FeedEventType.UTTERANCE_END]
    assert list(caption_events(u.make([], ends=[]), first_index=1)) == []


def test_a_gap_is_one_event_with_its_label() -> None:
    u = UpdateMaker()
    [(kind, data)] = list(caption_events(u.gap(2000, 4500), first_index=3))
    assert kind is FeedEventType.GAP
    assert data == {
        "start_ms": 2000,
        "end_ms": 4500,
        "label": "[2.5 s of audio not transcribed: transcription fell behind]",
    }
