"""A call into the audio library that a hung sound server can block, given a time limit.

Usage::

    stream = bounded_call(open_stream, OPEN_WAIT_S, on_late=close_stream)  # SoundSystemTimeout
    bounded_call(lambda: stream.close(), CLOSE_WAIT_S)
    forget = when_answering_again(callback)   # the last call past its limit has returned

PortAudio's calls into ALSA's PulseAudio/PipeWire plugin wait for the server's reply, with no
limit. A server that has hung (stopped, wedged) then froze whoever made the call: the window, at
Start or Stop or when it hid its level meters, and the session, which could not finish its
transcript. So these calls run on a helper thread, and the caller waits at most ``timeout_s``. A
call that outlives its limit goes on in the background (nothing can interrupt it); when it returns
at last, ``on_late`` gets its result (a stream opened too late is closed there). Until then every
other call fails at once (``stuck_for`` says how long it has waited): one freeze of a few seconds,
not one per call, and PortAudio is never entered from two threads at a time. Once the last such
call has returned, the ``when_answering_again`` callbacks run (on that call's thread), so that
whatever gave up on the server (the level meters, a failed Start's message) can try it again.

On Windows the call stays on the caller's thread: PortAudio's WASAPI needs COM started on the
thread that calls it (PortAudio issue #250), which the app's threads have and a helper would not,
and Windows has no such sound server to hang.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from typing import TypeVar

from captionist.pipeline.disk_thread import DiskNotAnswering, DiskThread

T = TypeVar("T")

OPEN_WAIT_S = 5.0  # opening a device takes < 1 s; a Bluetooth headset changing mode, a few
CLOSE_WAIT_S = 2.0
ON_HELPER_THREAD = sys.platform != "win32"

_stuck_lock = threading.Lock()
_stuck_since: list[float] = []  # when each call still running past its limit began
_answer_listeners: list[Callable[[], object]] = []


class SoundSystemTimeout(TimeoutError):
    """The sound system did not answer within the limit; the call goes on in the background."""


def stuck_for() -> float | None:
    """How long the oldest call still running past its limit has been waiting; None: none is."""
    with _stuck_lock:
        return time.monotonic() - min(_stuck_since) if _stuck_since else None


def when_answering_again(callback: Callable[[], object]) -> Callable[[], None]:
    """Call ``callback()`` each time the last call that outlived its limit returns at last (on that
    call's thread; its errors are ignored). Returns the function that stops this."""
    with _stuck_lock:
        _answer_listeners.append(callback)

    def forget() -> None:
        with _stuck_lock:
            if callback in _answer_listeners:
                _answer_listeners.remove(callback)

    return forget


def _answered(started: float) -> None:
    with _stuck_lock:
        _stuck_since.remove(started)
        listeners = [] if _stuck_since else list(_answer_listeners)
    for listener in listeners:
        with suppress(Exception):
            listener()


def bounded_call(call: Callable[[], T], timeout_s: float, on_late: Callable[[T], object] | None = None) -> T:
    """``call()``'s result (or its exception), waiting at most ``timeout_s`` for it; after that,
    ``SoundSystemTimeout``, and ``on_late(result)`` once the call returns a result after all.

    While a call that outlived its limit is still running, every other call fails at once with
    ``SoundSystemTimeout``: the server is known not to answer, a second wait would freeze the
    caller again, and PortAudio must not be entered from two threads at a time. The thread is the
    transcript writer's abandonable ``DiskThread``: the same give-up-and-clean-up-later problem."""
    if not ON_HELPER_THREAD:
        return call()
    waited = stuck_for()
    if waited is not None:
        raise SoundSystemTimeout(f"the sound system is not answering (for {waited:.0f} s)")
    helper = DiskThread(name="captionist-audio-call")
    started = time.monotonic()
    try:
        result = helper.call(call, timeout_s)
    except DiskNotAnswering:
        with _stuck_lock:
            _stuck_since.append(started)

        def late(result: T | None) -> None:  # None: the call raised
            try:
                if on_late is not None and result is not None:
                    on_late(result)  # errors are ignored: nobody is left to tell
            finally:
                _answered(started)

        helper.abandon(late)
        raise SoundSystemTimeout(f"the sound system did not answer within {timeout_s:g} s") from None
    helper.abandon(lambda _: None)  # ends the thread
    return result
