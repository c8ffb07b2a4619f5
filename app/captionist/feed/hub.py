"""The caption hub: one ordered, bounded history of caption events that any number of readers follow.

Usage::

    hub = CaptionHub()
    hub.add_listener(wake)                      # called (from the publishing thread) after each append
    hub.begin_session({"model": "demo.gguf", "latency_ms": 480})
    hub.publish(update)                         # a CaptionUpdate (GUI thread, from the controller)
    got = hub.read(after=None)                  # a new reader: its start (the last few lines)
    got = hub.read(after=got.next_after)        # everything after that, in order
    hub.current_lines(2, 42)                    # the caption's last lines as plain text

Events get consecutive ``seq`` numbers and are encoded to JSON once, when published. The history
keeps the last ``history`` events. A reader that resumes after a ``seq`` still in the history gets
exactly the events after it (nothing twice, nothing missed); one that is too far behind, or that
names a ``seq`` this hub never gave, gets ``reset=True`` and a fresh start: the current session's
``session_start`` and the events from the beginning of its last ``replay_lines`` lines.
``epoch`` is random per hub, so a reader can tell a restarted app's numbers from the old ones.

Thread-safety: every method may be called from any thread; publishing holds a lock only to append,
and listeners run after it is released (only when something was appended), so the publisher never
waits for a reader.
"""

from __future__ import annotations

import json
import secrets
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from captionist.feed.caption_lines import CaptionLines
from captionist.feed.events import FeedEventType, caption_events
from captionist.pipeline.events import CaptionUpdate

HISTORY = 20_000
REPLAY_LINES = 12
REPLAY_MAX = 2_000  # at most this many events replayed to a new reader


@dataclass(frozen=True)
class FeedRead:
    reset: bool  # the reader's position was not held: it starts afresh (clear what it shows)
    items: list[tuple[int, str]]  # (seq, JSON text), in order
    next_after: int  # where to read from next


class CaptionHub:
    def __init__(self, history: int = HISTORY, replay_lines: int = REPLAY_LINES) -> None:
        self.epoch = secrets.token_hex(4)
        self._lock = threading.Lock()
        self._events: deque[tuple[int, str]] = deque(maxlen=max(1, history))
        self._seq = 0
        self._session_start: tuple[int, str] | None = None  # the running (or last) session's start
        self._line_starts: deque[int] = deque(maxlen=max(1, replay_lines))  # seq of each line's first event
        self._tokens = 0  # text tokens sent in the current session
        self._lines = CaptionLines()
        self._style: dict[str, Any] = {}
        self._active = False
        self._listeners: list[Callable[[], None]] = []

    # --- readers ------------------------------------------------------------------------------
    def add_listener(self, listener: Callable[[], None]) -> None:
        """``listener()`` is called after every append, on the publishing thread; it must not block."""
        with self._lock:
            self._listeners.append(listener)

    def remove_listener(self, listener: Callable[[], None]) -> None:
        with self._lock:
            if listener in self._listeners:
                self._listeners.remove(listener)

    @property
    def last_seq(self) -> int:
        with self._lock:
            return self._seq

    @property
    def active(self) -> bool:
        """Whether a session is running."""
        with self._lock:
            return self._active

    def style(self) -> dict[str, Any]:
        with self._lock:
            return dict(self._style)

    def read(self, after: int | None, limit: int = REPLAY_MAX) -> FeedRead:
        """The events after ``after`` (at most ``limit``; read again from ``next_after`` for more),
        or, with ``after`` None, unknown or no longer held, a fresh start (``reset`` unless None)."""
        with self._lock:
            if after is not None and self._holds_after(after):
                items = self._since(after, limit)
                return FeedRead(False, items, items[-1][0] if items else after)
            items = self._fresh_start(limit)
            return FeedRead(after is not None, items, self._seq)

    def _holds_after(self, after: int) -> bool:
        if after > self._seq or after < 0:
            return False
        if after == self._seq:
            return True
        return bool(self._events) and self._events[0][0] <= after + 1

    def _since(self, after: int, limit: int) -> list[tuple[int, str]]:
        if after >= self._seq:
            return []
        first = self._events[0][0]
        start = max(0, after + 1 - first)
        return [self._events[i] for i in range(start, min(len(self._events), start + limit))]

    def _fresh_start(self, limit: int) -> list[tuple[int, str]]:
        if self._session_start is None:
            return []
        start_seq = self._line_starts[0] if self._line_starts else self._session_start[0]
        start_seq = max(start_seq, self._seq + 1 - limit)
        items = self._since(start_seq - 1, limit)
        if not items or items[0][0] > self._session_start[0]:  # the session's start first, kept
            items = [self._session_start] + items  # even when it is older than the history
        return items

    def current_lines(self, lines: int = 2, width: int = 42) -> list[str]:
        with self._lock:
            return self._lines.current(lines, width)

    # --- publishing ---------------------------------------------------------------------------
    def _append(self, kind: FeedEventType, data: dict[str, Any]) -> int:
        """Append one event (the lock is held); its seq."""
        self._seq += 1
        text = json.dumps(
            {"seq": self._seq, "type": kind.value, **data}, ensure_ascii=False, separators=(",", ":")
        )
        self._events.append((self._seq, text))
        return self._seq

    def _wake(self) -> None:
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            listener()

    def begin_session(self, meta: dict[str, Any] | None = None) -> None:
        """A session started (``meta``: model, sources, latency_ms, ... as JSON values)."""
        with self._lock:
            self._tokens = 0
            self._lines.clear()
            self._line_starts.clear()
            self._active = True
            seq = self._append(FeedEventType.SESSION_START, dict(meta or {}))
            self._session_start = self._events[-1]
            self._line_starts.append(seq)
        self._wake()

    def publish(self, update: CaptionUpdate) -> None:
        """The events of one caption update (in order); ignored when no session was begun."""
        with self._lock:
            if self._session_start is None:
                return
            before = self._seq
            for kind, data in caption_events(update, self._tokens):
                seq = self._append(kind, data)
                if kind is FeedEventType.TOKENS:
                    self._tokens += len(data["tokens"])
                    self._lines.add_text("".join(t["text"] for t in data["tokens"]))
                elif kind is FeedEventType.UTTERANCE_END:
                    self._lines.new_line()
                    self._line_starts.append(seq + 1)  # the next event starts the next line
                elif kind is FeedEventType.GAP:
                    self._lines.add_line(data["label"])
                    self._line_starts.extend((seq, seq + 1))  # a line of its own, then the next
            appended = self._seq != before
        if appended:  # most updates (a feed that committed nothing) wake nobody
            self._wake()

    def publish_alert(self, data: dict[str, Any]) -> None:
        """A keyword was spoken (``data``: keyword, text, token indices, time)."""
        with self._lock:
            self._append(FeedEventType.ALERT, data)
        self._wake()

    def end_session(self, meta: dict[str, Any] | None = None) -> None:
        with self._lock:
            if not self._active:
                return
            self._active = False
            self._append(FeedEventType.SESSION_STOP, dict(meta or {}))
        self._wake()

    def set_style(self, style: dict[str, Any]) -> None:
        """The caption style (colours, font, lines) the page uses; sent as a ``style`` event."""
        with self._lock:
            if style == self._style:
                return
            self._style = dict(style)
            self._append(FeedEventType.STYLE, {"style": dict(style)})
        self._wake()
