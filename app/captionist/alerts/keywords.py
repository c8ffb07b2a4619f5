"""The user's keyword list and where it occurs in a run of words.

Usage::

    keywords = KeywordList.parse(["Alice", "budget review", "  ", "alice"])   # 2 keywords
    keywords.marks(["the", "Budget", "review,", "alice?"])  # [False, True, True, True]
    keywords.ending_at(["the", "budget", "review"])          # [Keyword("budget review")]

Matching is by whole words, ignoring case and the punctuation around a word ("Alice," and
"ALICE" are "alice"; "Alicia" is not); a keyword of several words matches those words in a row.
Chinese and Japanese have no spaces between words, so there each character is a word
(``transcript.unspaced.word_spans``): the keyword "预算" matches inside "预算安排".
Immutable: safe to share between threads.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from captionist.transcript.unspaced import word_spans

MAX_KEYWORDS = 64
MAX_WORDS = 16  # words in one keyword (a Chinese character is a word)


def normalize(word: str) -> str:
    """``word`` as keywords compare it: case-folded, without leading or trailing punctuation."""
    start, end = 0, len(word)
    while start < end and not word[start].isalnum():
        start += 1
    while end > start and not word[end - 1].isalnum():
        end -= 1
    return word[start:end].casefold()


@dataclass(frozen=True)
class Keyword:
    text: str  # as the user wrote it (trimmed)
    words: tuple[str, ...]  # normalized


@dataclass(frozen=True)
class KeywordList:
    keywords: tuple[Keyword, ...] = ()

    @staticmethod
    def parse(texts: Iterable[str]) -> KeywordList:
        """Keywords from the user's entries: blank ones and repeats (after normalizing) dropped,
        at most ``MAX_KEYWORDS``, each at most ``MAX_WORDS`` words."""
        seen: set[tuple[str, ...]] = set()
        out: list[Keyword] = []
        for text in texts:
            text = str(text)
            words = tuple(w for w in (normalize(text[a:b]) for a, b in word_spans(text)) if w)[:MAX_WORDS]
            if words and words not in seen:
                seen.add(words)
                out.append(Keyword(" ".join(text.split()), words))
            if len(out) == MAX_KEYWORDS:
                break
        return KeywordList(tuple(out))

    def __bool__(self) -> bool:
        return bool(self.keywords)

    @property
    def longest(self) -> int:
        return max((len(k.words) for k in self.keywords), default=0)

    def ending_at(self, words: Sequence[str]) -> list[Keyword]:
        """The keywords whose last word is the last of ``words`` (normalized or not)."""
        tail = [normalize(w) for w in words[-self.longest :]] if self.keywords else []
        return [
            k for k in self.keywords if len(k.words) <= len(tail) and tuple(tail[-len(k.words) :]) == k.words
        ]

    def marks(self, words: Sequence[str]) -> list[bool]:
        """For each of ``words``: whether it is part of a keyword."""
        if not self.keywords:
            return [False] * len(words)
        norm = [normalize(w) for w in words]
        out = [False] * len(norm)
        for k in self.keywords:
            n = len(k.words)
            for i in range(len(norm) - n + 1):
                if tuple(norm[i : i + n]) == k.words:
                    out[i : i + n] = [True] * n
        return out
