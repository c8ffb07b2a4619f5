"""utterance_ends: where an update's ends of utterance fall among its new tokens."""

from __future__ import annotations

import pytest

from captionist.engine import StreamEvent, StreamUpdate, Token
from captionist.pipeline.utterance import utterance_ends


def _update(n_tokens: int, events: list[StreamEvent], event_at: list[int]) -> StreamUpdate:
    toks = [Token(i, f" w{i}", 80 * i) for i in range(n_tokens)]
    return StreamUpdate(1, "".join(t.piece for t in toks), toks, [t.id for t in toks], 0, 0, events, event_at)


def test_ends_are_taken_where_the_engine_put_them() -> None:
    eou = StreamEvent.END_OF_UTTERANCE
    u = _update(5, [eou, StreamEvent.REANCHOR, eou, StreamEvent.FINISHED], [1, 3, 3, 5])
    assert u.placed_events() == [(1, eou), (3, StreamEvent.REANCHOR), (3, eou), (5, StreamEvent.FINISHED)]
    assert utterance_ends(u) == [1, 3]  # re-anchors and the finish are not utterance ends


def test_an_end_before_any_token_and_none_at_all() -> None:
    assert utterance_ends(_update(2, [StreamEvent.END_OF_UTTERANCE], [0])) == [0]
    assert utterance_ends(_update(3, [], [])) == []


@pytest.mark.parametrize(
    ("events", "event_at"),
    [
        ([StreamEvent.END_OF_UTTERANCE], []),  # a position missing
        ([StreamEvent.END_OF_UTTERANCE], [4]),  # beyond the new tokens
        ([StreamEvent.END_OF_UTTERANCE], [-1]),
        ([StreamEvent.END_OF_UTTERANCE, StreamEvent.FINISHED], [2, 1]),  # out of order
    ],
)
def test_positions_that_cannot_be_are_refused(events: list[StreamEvent], event_at: list[int]) -> None:
    with pytest.raises(ValueError, match="event"):
        _update(3, events, event_at)
