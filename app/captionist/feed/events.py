"""The caption feed's events: what changed in a session, as the JSON the feed sends.

Usage::

    for kind, data in caption_events(update, first_index=n):   # a CaptionUpdate, in order
        hub.append(kind, data)

Every event is one JSON object ``{"seq": N, "type": "<FeedEventType value>", ...}``; the fields
per type are documented in docs/caption-feed.md. ``tokens`` carry each committed text token once,
with its session-wide ``index`` (0, 1, 2, ... across the session, never reused) and its time in ms
since the session started; committed text is never revised, so a client that has applied every
event in ``seq`` order holds exactly the session's text.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from typing import Any

from captionist.pipeline.events import CaptionUpdate, is_text_token


class FeedEventType(enum.Enum):
    SESSION_START = "session_start"  # a session began: model, sources, latency
    TOKENS = "tokens"  # committed text tokens, in order
    UTTERANCE_END = "utterance_end"  # the model ended an utterance: the next words start a new line
    GAP = "gap"  # audio was dropped without being transcribed (a line of its own)
    ALERT = "alert"  # a keyword was spoken
    SESSION_STOP = "session_stop"  # the session ended
    STYLE = "style"  # the caption style changed (the page restyles itself)


def caption_events(update: CaptionUpdate, first_index: int) -> Iterator[tuple[FeedEventType, dict[str, Any]]]:
    """The events of one ``CaptionUpdate``: its text tokens split where utterances ended, each end
    an ``UTTERANCE_END``, a gap a ``GAP``. ``first_index``: the session index of its first text token
    (the count of text tokens sent before it)."""
    if update.gap is not None:
        gap = update.gap
        yield FeedEventType.GAP, {"start_ms": gap.start_ms, "end_ms": gap.end_ms, "label": gap.label()}
        return
    ends = sorted(set(update.utterance_ends))
    index = first_index
    batch: list[dict[str, Any]] = []
    last_ms = 0

    def flush() -> Iterator[tuple[FeedEventType, dict[str, Any]]]:
        if batch:
            yield FeedEventType.TOKENS, {"revision": update.revision, "tokens": list(batch)}
            batch.clear()

    for position, token in enumerate(update.new_tokens):
        while ends and ends[0] <= position:
            yield from flush()
            yield FeedEventType.UTTERANCE_END, {"time_ms": last_ms}
            ends.pop(0)
        last_ms = token.time_ms
        if not is_text_token(token):
            continue
        batch.append({"index": index, "text": token.piece, "time_ms": token.time_ms})
        index += 1
    yield from flush()
    for _ in ends:  # ends after the last token (several at one place count once: ``ends`` is a set)
        yield FeedEventType.UTTERANCE_END, {"time_ms": last_ms}
