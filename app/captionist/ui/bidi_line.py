"""The visual order of a caption line's words, for right-to-left scripts (Arabic, Hebrew, Persian).

Usage::

    order = visual_order(["مرحبا", "بكم", "في", "Captionist", "2026"])  # left to right on screen
    if line_is_rtl(words): ...                                     # align the line to the right

The overlay draws a line word by word, each in its own colour (the newest words, keywords). Qt
shapes each word (joins Arabic letters, runs a right-to-left word from right to left), but the
order of the words on the line is the overlay's to choose, and drawing them in the order they were
spoken put an Arabic sentence on screen backwards. This applies Unicode's bidirectional algorithm
(UAX #9) at the level of words: a line's direction is that of its first word with a strong
direction; right-to-left words, and left-to-right words inside a right-to-left line, get odd and
even levels; numbers follow rule W7 (after a right-to-left word they stay numbers, else they are
left-to-right); words without a strong direction (punctuation) take the direction of the words on
both sides when these agree, else the line's (N1, N2); then runs are reversed from the highest
level down (L2). Each word is taken to have one direction (mixed words are rare in captions).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from enum import Enum


class Direction(Enum):
    LTR = "ltr"
    RTL = "rtl"
    NUMBER = "number"  # European or Arabic digits, and no strong letter
    NEUTRAL = "neutral"  # punctuation, symbols


_RTL_CLASSES = frozenset(("R", "AL"))
_NUMBER_CLASSES = frozenset(("EN", "AN"))


def direction_of(word: str) -> Direction:
    """The direction of ``word``: that of its first strong character, else NUMBER when it holds a
    digit, else NEUTRAL."""
    number = False
    for ch in word:
        cls = unicodedata.bidirectional(ch)
        if cls == "L":
            return Direction.LTR
        if cls in _RTL_CLASSES:
            return Direction.RTL
        number = number or cls in _NUMBER_CLASSES
    return Direction.NUMBER if number else Direction.NEUTRAL


def line_is_rtl(words: Sequence[str]) -> bool:
    """Whether the line's first word with a strong direction is right-to-left."""
    for word in words:
        d = direction_of(word)
        if d in (Direction.LTR, Direction.RTL):
            return d is Direction.RTL
    return False


def _levels(words: Sequence[str]) -> list[int]:
    """The embedding level of each word and of the space after it: ``[w0, s0, w1, s1, ..., wn]``.
    The spaces count: between two numbers in a right-to-left line a space is right-to-left, so the
    numbers are two runs ("10 20" shows as "20 10", as UAX #9 has it); between two English words it
    is left-to-right and they stay one run."""
    base = 1 if line_is_rtl(words) else 0
    kinds: list[Direction] = []
    for i, word in enumerate(words):
        if i:
            kinds.append(Direction.NEUTRAL)  # the space between two words
        kinds.append(direction_of(word))
    previous_strong = Direction.RTL if base else Direction.LTR
    resolved: list[Direction] = []
    for kind in kinds:  # W7: a number after a left-to-right word (or at an LTR start) is LTR
        if kind is Direction.NUMBER and previous_strong is Direction.LTR:
            kind = Direction.LTR
        if kind in (Direction.LTR, Direction.RTL):
            previous_strong = kind
        resolved.append(kind)
    for i, kind in enumerate(resolved):  # N1, N2: neutrals between agreeing sides take their side
        if kind is not Direction.NEUTRAL:
            continue
        left = next((k for k in reversed(resolved[:i]) if k is not Direction.NEUTRAL), None)
        right = next((k for k in resolved[i + 1 :] if k is not Direction.NEUTRAL), None)
        sides = {Direction.LTR if k is Direction.LTR else Direction.RTL for k in (left, right) if k}
        resolved[i] = (
            sides.pop() if len(sides) == 1 and left and right else (Direction.RTL if base else Direction.LTR)
        )
    rtl_line = {Direction.LTR: 2, Direction.RTL: 1, Direction.NUMBER: 2}  # I1, I2
    ltr_line = {Direction.LTR: 0, Direction.RTL: 1, Direction.NUMBER: 2}
    return [(rtl_line if base else ltr_line)[kind] for kind in resolved]


def visual_order(words: Sequence[str]) -> list[int]:
    """Indices of ``words`` (in spoken order) in the order they appear on screen, left to right."""
    levels = _levels(words)
    order = list(range(len(levels)))  # words at even positions, the spaces between them at odd ones
    lowest_odd = min((lv for lv in levels if lv % 2), default=None)
    if lowest_odd is not None:
        for level in range(max(levels), lowest_odd - 1, -1):  # L2
            i = 0
            while i < len(order):
                if levels[order[i]] >= level:
                    j = i
                    while j < len(order) and levels[order[j]] >= level:
                        j += 1
                    order[i:j] = reversed(order[i:j])
                    i = j
                else:
                    i += 1
    return [k // 2 for k in order if k % 2 == 0]
