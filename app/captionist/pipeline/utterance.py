"""Where, inside one stream update, the model ended an utterance (a policy, kept apart from the worker).

Usage::

    ends = utterance_ends(update.new_tokens, update.events, eou_id=info.eou_id)   # [3]

A ``StreamUpdate`` lists its ``END_OF_UTTERANCE`` events without saying where among its new
tokens each one happened, so the position is found here:

* a model whose end of utterance is a token of its own (FastConformer Parakeet-EOU: ``<EOU>``,
  ``info["eou_id"]``) emits that token as a control token; each end lies just after it, exactly;
* otherwise (Voxtral: the end-of-speech token is not passed on) every end is placed after the
  update's last token. Live, updates are a capture block long, so this is off by at most one block;
  control tokens carry no text, so a boundary anywhere in the pause around the event gives the
  same captions.
"""

from __future__ import annotations

from collections.abc import Sequence

from captionist.engine import StreamEvent, Token


def utterance_ends(tokens: Sequence[Token], events: Sequence[StreamEvent], eou_id: int = -1) -> list[int]:
    """Counts of ``tokens`` before each end of utterance of one update (``len(tokens)``: after all)."""
    n = sum(1 for e in events if e == StreamEvent.END_OF_UTTERANCE)
    if n == 0:
        return []
    marked = [i + 1 for i, t in enumerate(tokens) if eou_id >= 0 and t.is_control and t.id == eou_id]
    if len(marked) == n:
        return marked
    return [len(tokens)]
