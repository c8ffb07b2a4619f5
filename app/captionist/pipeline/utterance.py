"""Where, inside one stream update, the model ended an utterance (a policy, kept apart from the worker).

Usage::

    ends = utterance_ends(update)   # [3]: the utterance ended after the update's third new token

The engine reports each event's position among the update's new tokens (``StreamUpdate.event_at``),
so an end is exact for every model: after Parakeet-EOU's ``<EOU>`` control token, and for Voxtral at
the decoder step that produced its end-of-speech token (that token itself is not passed on). Only the
``END_OF_UTTERANCE`` events count; re-anchors, segment ends and the finish are not utterance ends.
"""

from __future__ import annotations

from captionist.engine import StreamEvent, StreamUpdate


def utterance_ends(update: StreamUpdate) -> list[int]:
    """Counts of ``update.new_tokens`` before each end of utterance (``len(new_tokens)``: after all)."""
    return [at for at, e in update.placed_events() if e is StreamEvent.END_OF_UTTERANCE]
