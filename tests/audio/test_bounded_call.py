"""Calls a hung sound server can block, given a limit (``captionist.audio.bounded_call``)."""

from __future__ import annotations

import threading
import time

import pytest

from captionist.audio import bounded_call as module
from captionist.audio.bounded_call import SoundSystemTimeout, bounded_call, stuck_for
from tests.fakes.stuck_import import wait_until_answered


def test_a_call_that_returns_gives_its_result_and_its_errors() -> None:
    assert bounded_call(lambda: 42, 5) == 42
    with pytest.raises(ValueError, match="bad rate"):
        bounded_call(lambda: (_ for _ in ()).throw(ValueError("bad rate")), 5)


def test_a_call_that_does_not_return_in_time_is_left_and_its_late_result_handed_on() -> None:
    reply = threading.Event()
    late: list[str] = []
    got_late = threading.Event()

    def stuck() -> str:
        reply.wait(30)
        return "stream"

    with pytest.raises(SoundSystemTimeout, match="did not answer within 0.1 s"):
        bounded_call(stuck, 0.1, on_late=lambda value: (late.append(value), got_late.set()))
    assert late == []
    assert stuck_for() is not None
    with pytest.raises(SoundSystemTimeout, match="is not answering"):  # at once: no second wait
        bounded_call(lambda: "another", 30)
    reply.set()
    assert got_late.wait(10) and late == ["stream"]
    wait_until_answered()
    assert bounded_call(lambda: "another", 5) == "another"  # the server answers: calls work again


def test_a_late_failure_hands_nothing_on() -> None:
    reply, finished = threading.Event(), threading.Event()
    late: list[object] = []

    def stuck() -> str:
        try:
            reply.wait(30)
            raise OSError("device gone")
        finally:
            finished.set()

    with pytest.raises(SoundSystemTimeout):
        bounded_call(stuck, 0.1, on_late=late.append)
    reply.set()
    assert finished.wait(10)
    wait_until_answered()
    assert late == []


def test_on_windows_the_call_stays_on_the_callers_thread(monkeypatch) -> None:
    # PortAudio's WASAPI needs COM on the calling thread, which a helper thread would not have
    monkeypatch.setattr(module, "ON_HELPER_THREAD", False)
    assert bounded_call(threading.current_thread, 5) is threading.current_thread()
    monkeypatch.setattr(module, "ON_HELPER_THREAD", True)
    assert bounded_call(threading.current_thread, 5) is not threading.current_thread()


def test_the_listeners_hear_once_the_last_late_call_has_returned() -> None:
    # what gave up on the hung server (the level meters, a failed Start's message) tries it again
    replies = [threading.Event(), threading.Event()]
    heard: list[str] = []
    got = threading.Event()

    def listener() -> None:
        heard.append(threading.current_thread().name)
        got.set()

    def failing() -> None:
        raise RuntimeError("a listener's error reaches nobody")

    forget = module.when_answering_again(listener)
    forget_failing = module.when_answering_again(failing)
    try:
        with pytest.raises(SoundSystemTimeout):
            bounded_call(lambda: replies[0].wait(30), 0.05)
        # a second call entered before the first was known to hang (another thread): both wait
        module._stuck_since.append(0.0)
        replies[0].set()
        wait_until_stuck_only(since=0.0)
        assert heard == []  # one call is still waiting
        module._answered(0.0)
        assert heard == [threading.current_thread().name] and got.is_set()
        heard.clear()

        forget()
        with pytest.raises(SoundSystemTimeout):
            bounded_call(lambda: replies[1].wait(30), 0.05)
        replies[1].set()
        wait_until_answered()
        assert heard == []  # forgotten
    finally:
        forget()
        forget_failing()
        for reply in replies:
            reply.set()


def test_a_listener_runs_on_the_thread_of_the_call_that_returned() -> None:
    reply, got = threading.Event(), threading.Event()
    threads: list[threading.Thread] = []
    forget = module.when_answering_again(lambda: (threads.append(threading.current_thread()), got.set()))
    try:
        with pytest.raises(SoundSystemTimeout):
            bounded_call(lambda: reply.wait(30), 0.05)
        reply.set()
        assert got.wait(10)
        assert threads[0] is not threading.current_thread() and threads[0].name == "captionist-audio-call"
        wait_until_answered()
    finally:
        forget()
        reply.set()


def wait_until_stuck_only(since: float, timeout_s: float = 10.0) -> None:
    """Until the only call left running past its limit is the one that began at ``since``."""
    deadline = time.monotonic() + timeout_s
    while module._stuck_since != [since]:
        assert time.monotonic() < deadline, module._stuck_since
        time.sleep(0.01)
