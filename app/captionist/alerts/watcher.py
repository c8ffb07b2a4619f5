"""Follows a session's committed text and reports each spoken keyword once.

Usage::

    watcher = AlertWatcher(KeywordList.parse(["alice", "two three"]))
    watcher.begin_session()
    for hit in watcher.feed(update):    # a CaptionUpdate; hits in the order they were spoken
        print(hit.keyword, hit.time_ms, hit.first_token, hit.last_token)

A word counts once it is complete: when the next word begins, the utterance ends, audio is
skipped (a gap) or the session's final update arrives, so a name split over several tokens or
updates is matched whole and a word that is still growing ("two" of "twenty") is not. A keyword of
several words matches across token and update boundaries within one utterance (one caption line,
as the overlay and the transcript show it), not across an utterance end or a gap. Token numbers are
the session-wide indices of text tokens, the same as the caption feed's. Not thread-safe: one
owner (the GUI thread).
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass
from functools import reduce

from captionist.alerts.keywords import MAX_WORDS, KeywordList, normalize
from captionist.pipeline.events import CaptionUpdate, is_text_token
from captionist.transcript.unspaced import join, may_break, pieces

WHITESPACE = re.compile(r"(\s+)")


@dataclass(frozen=True)
class KeywordHit:
    keyword: str  # as the user wrote it
    text: str  # the words as spoken (with their case and punctuation)
    time_ms: int  # when its first word began, ms since the session started
    first_token: int
    last_token: int

    def feed_data(self) -> dict[str, object]:
        """The caption feed's ``alert`` event data (docs/caption-feed.md)."""
        return {
            "keyword": self.keyword,
            "text": self.text,
            "time_ms": self.time_ms,
            "tokens": list(range(self.first_token, self.last_token + 1)),
        }


@dataclass
class _Word:
    text: str
    first: int
    last: int
    time_ms: int


class AlertWatcher:
    def __init__(self, keywords: KeywordList | None = None) -> None:
        self.keywords = keywords or KeywordList()
        self.begin_session()

    def set_keywords(self, keywords: KeywordList) -> None:
        self.keywords = keywords

    def begin_session(self) -> None:
        self._index = 0  # the next text token's session index
        self._word: _Word | None = None
        self._done: deque[_Word] = deque(maxlen=MAX_WORDS)

    def feed(self, update: CaptionUpdate) -> list[KeywordHit]:
        hits: list[KeywordHit] = []
        if update.gap is not None:
            self._end_line(hits)
            return hits
        ends = set(update.utterance_ends)
        for position, token in enumerate(update.new_tokens):
            if position in ends:
                self._end_line(hits)
            if not is_text_token(token):
                continue
            index, self._index = self._index, self._index + 1
            for part in WHITESPACE.split(token.piece):  # words and the spaces between them
                if part.isspace():
                    self._end_word(hits)
                    continue
                for k, piece in enumerate(pieces(part)):  # a Chinese character is a word of its own
                    if k or (self._word is not None and may_break(self._word.text[-1], piece[0])):
                        self._end_word(hits)
                    self._add(piece, index, token.time_ms)
        if len(update.new_tokens) in ends or update.final:
            self._end_line(hits)
        return hits

    def _end_line(self, hits: list[KeywordHit]) -> None:
        """An end of utterance (or of the session): a keyword of several words does not span it."""
        self._end_word(hits)
        self._done.clear()

    def _add(self, text: str, index: int, time_ms: int) -> None:
        if self._word is None:
            self._word = _Word(text, index, index, time_ms)
        else:
            self._word.text += text
            self._word.last = index

    def _end_word(self, hits: list[KeywordHit]) -> None:
        word, self._word = self._word, None
        if word is None or not normalize(word.text):
            return
        self._done.append(word)
        if not self.keywords:
            return
        words = list(self._done)
        for keyword in self.keywords.ending_at([w.text for w in words]):
            spoken = words[-len(keyword.words) :]
            hits.append(
                KeywordHit(
                    keyword.text,
                    reduce(join, (w.text for w in spoken)),
                    spoken[0].time_ms,
                    spoken[0].first,
                    spoken[-1].last,
                )
            )
