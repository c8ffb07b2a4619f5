"""The hub's history: exactly-once resumption, fresh starts, resets, and publishing from threads."""

from __future__ import annotations

import json
import threading

from captionist.feed.hub import CaptionHub
from tests.fakes.caption_updates import UpdateMaker


def decoded(items: list[tuple[int, str]]) -> list[dict]:
    return [json.loads(text) for _, text in items]


def tokens_of(items: list[tuple[int, str]]) -> list[str]:
    return [t["text"] for e in decoded(items) if e["type"] == "tokens" for t in e["tokens"]]


def test_events_are_numbered_in_order_and_resume_exactly_after_a_seq() -> None:
    hub, u = CaptionHub(), UpdateMaker()
    hub.publish(u.make([" lost"]))  # before any session: nothing to say
    assert hub.last_seq == 0
    hub.begin_session({"model": "demo.gguf"})
    hub.publish(u.make([" hello", " world"], ends=[2]))
    hub.publish(u.make([" one", " two"]))
    got = hub.read(after=0)
    assert not got.reset
    assert [s for s, _ in got.items] == [1, 2, 3, 4]
    assert [e["type"] for e in decoded(got.items)] == ["session_start", "tokens", "utterance_end", "tokens"]
    assert decoded(got.items)[0]["model"] == "demo.gguf"
    for cut in range(5):
        rest = hub.read(after=cut)
        assert [s for s, _ in rest.items] == list(range(cut + 1, 5)) and rest.next_after == 4
    assert hub.read(after=4).items == [] and hub.read(after=4).next_after == 4


def test_a_new_reader_starts_at_the_last_lines_after_the_session_start() -> None:
    hub, u = CaptionHub(replay_lines=2), UpdateMaker()
    hub.begin_session({})
    for i in range(5):
        hub.publish(u.make([f" line{i}a", f" line{i}b"], ends=[2]))
    got = hub.read(after=None)
    assert not got.reset and got.next_after == hub.last_seq
    events = decoded(got.items)
    assert events[0]["type"] == "session_start"
    assert tokens_of(got.items) == [" line4a", " line4b"]  # the last line start is after line 4 ended
    hub.publish(u.make([" line5a"]))
    assert tokens_of(hub.read(after=None).items) == [" line4a", " line4b", " line5a"]


def test_a_reader_that_fell_out_of_the_history_or_names_an_unknown_seq_is_reset() -> None:
    hub, u = CaptionHub(history=10), UpdateMaker()
    hub.begin_session({})
    for i in range(30):
        hub.publish(u.make([f" w{i}"]))
    assert hub.read(after=2).reset  # long gone
    assert hub.read(after=hub.last_seq + 5).reset  # from another run of the app
    assert not hub.read(after=hub.last_seq - 9).reset  # still held
    fresh = hub.read(after=2)
    assert decoded(fresh.items)[0]["type"] == "session_start"  # kept though older than the history
    assert tokens_of(fresh.items)[-1] == " w29"


def test_current_lines_and_session_boundaries() -> None:
    hub, u = CaptionHub(), UpdateMaker()
    hub.begin_session({})
    hub.publish(u.make([" hello", " world"], ends=[2]))
    hub.publish(u.make([" again"]))
    assert hub.current_lines(2, 42) == ["hello world", "again"]
    hub.publish(u.gap(1000, 3000))
    assert hub.current_lines(1, 100) == ["[2.0 s of audio not transcribed: transcription fell behind]"]
    assert hub.active
    hub.end_session({"audio_ms": 5000})
    hub.end_session({})  # once
    assert not hub.active
    assert [e["type"] for e in decoded(hub.read(after=0).items)][-2:] == ["gap", "session_stop"]
    hub.begin_session({})
    assert hub.current_lines() == []  # a new session starts with empty captions


def test_style_is_kept_and_sent_only_when_it_changes() -> None:
    hub = CaptionHub()
    hub.set_style({"lines": 2})
    hub.set_style({"lines": 2})
    hub.set_style({"lines": 3})
    assert hub.style() == {"lines": 3}
    assert [json.loads(t)["style"] for _, t in hub.read(after=0).items] == [{"lines": 2}, {"lines": 3}]


def test_listeners_run_outside_the_lock_after_each_append() -> None:
    hub, u = CaptionHub(), UpdateMaker()
    seen: list[int] = []
    hub.add_listener(lambda: seen.append(hub.last_seq))  # would deadlock if called under the lock
    hub.begin_session({})
    hub.publish(u.make([" a"]))
    assert seen == [1, 2]
    hub.publish(u.make([]))  # an update that committed nothing wakes nobody
    assert seen == [1, 2]
    listener = hub._listeners[0]
    hub.remove_listener(listener)
    hub.publish(u.make([" b"]))
    assert seen == [1, 2]


def test_publishing_from_several_threads_loses_nothing_and_keeps_each_threads_order() -> None:
    hub = CaptionHub(history=100_000)
    hub.begin_session({})
    n_threads, per_thread = 4, 300

    def publish(k: int) -> None:
        u = UpdateMaker()
        for i in range(per_thread):
            hub.publish(u.make([f" t{k}-{i}"]))

    threads = [threading.Thread(target=publish, args=(k,)) for k in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    items = hub.read(after=0, limit=10**6).items
    assert [s for s, _ in items] == list(range(1, n_threads * per_thread + 2))
    words = tokens_of(items)
    for k in range(n_threads):
        assert [w for w in words if w.startswith(f" t{k}-")] == [f" t{k}-{i}" for i in range(per_thread)]
    indices = [t["index"] for e in decoded(items) if e["type"] == "tokens" for t in e["tokens"]]
    assert indices == list(range(n_threads * per_thread))  # one numbering for the session
