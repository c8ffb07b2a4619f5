"""Text written without spaces between words (Chinese, Japanese): where lines may break, how wide
text is, and how two pieces join.

Usage::

    from captionist.transcript.unspaced import join, may_break, width
    may_break("市", "场")      # True: a line may break between two ideographs, no space needed
    may_break("好", "。")      # False: a line never starts with closing punctuation
    pieces("大家好。")         # ["大", "家", "好。"]: where a line may break
    width("大家好")            # 6: wide (East Asian) characters take two columns
    join("今天", "开会")        # "今天开会"; join("good", "morning") is "good morning"

Subtitle lines are measured in columns, so that a caption of Chinese (21 characters a line at 42
columns) is as wide on screen as one of English. Chinese and Japanese mark no word boundaries, so
a line may break between any two of their characters, except before closing punctuation and small
kana or after an opening bracket (the usual kinsoku rules, a simplified UAX #14). Korean is written
with spaces and breaks at them like English; its syllables are wide all the same. Text that
contains no such characters behaves exactly as before: words, spaces, one column a character.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

# Unicode blocks of scripts written without spaces (code point ranges, inclusive).
_UNSPACED_RANGES = (
    (0x2E80, 0x2FDF),  # CJK radicals, Kangxi radicals
    (0x3000, 0x303F),  # CJK symbols and punctuation
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x3100, 0x312F),  # Bopomofo
    (0x31A0, 0x31FF),  # Bopomofo extended, CJK strokes, Katakana phonetic extensions
    (0x3400, 0x4DBF),  # CJK unified ideographs extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0xFE30, 0xFE4F),  # CJK compatibility forms
    (0xFF00, 0xFF60),  # fullwidth ASCII forms and punctuation
    (0xFF61, 0xFF9F),  # halfwidth CJK punctuation and Katakana
    (0x20000, 0x3FFFF),  # CJK unified ideographs extensions B and later
)

# Never at the start of a line: closing punctuation, small kana, prolonged sound and iteration marks.
NO_LINE_START = frozenset(
    "、。，．・：；！？）］｝〕〉》」』】〙〗〟’”ー々〻ゝゞヽヾ…‥"
    "ぁぃぅぇぉっゃゅょゎゕゖァィゥェォッャュョヮヵヶㇰㇱㇲㇳㇴㇵㇶㇷㇸㇹㇺㇻㇼㇽㇾㇿ"
    ")]},.!?:;%"
)
# Never at the end of a line: opening brackets and quotes.
NO_LINE_END = frozenset("（［｛〔〈《「『【〘〖〝‘“([{")


_UNSPACED = re.compile("[" + "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in _UNSPACED_RANGES) + "]")


def is_unspaced(ch: str) -> bool:
    """Whether ``ch`` belongs to a script written without spaces between words."""
    return _UNSPACED.match(ch) is not None


@lru_cache(maxsize=8192)
def may_break(before: str, after: str) -> bool:
    """Whether a line may break between the characters ``before`` and ``after`` with no space."""
    if not (is_unspaced(before) or is_unspaced(after)):
        return False
    return after not in NO_LINE_START and before not in NO_LINE_END


def pieces(word: str) -> list[str]:
    """``word`` (no whitespace in it) cut at every place ``may_break`` allows: itself for a word of
    English, one piece per character (kinsoku aside) for Chinese."""
    if word.isascii() or not _UNSPACED.search(word):
        return [word] if word else []
    out, start = [], 0
    for i in range(1, len(word)):
        if may_break(word[i - 1], word[i]):
            out.append(word[start:i])
            start = i
    return [*out, word[start:]]


def word_spans(text: str) -> list[tuple[int, int]]:
    """Where ``text``'s words are, as (start, end) offsets: its runs without whitespace, cut into
    ``pieces`` (in Chinese, a character is a word: a keyword of two characters is two words)."""
    spans = []
    for match in re.finditer(r"\S+", text):
        start = match.start()
        for piece in pieces(match.group()):
            spans.append((start, start + len(piece)))
            start += len(piece)
    return spans


@lru_cache(maxsize=8192)
def char_width(ch: str) -> int:
    """Columns ``ch`` takes: 2 for wide and fullwidth characters, 0 for combining and format
    characters, else 1."""
    if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def width(text: str) -> int:
    """Columns ``text`` takes (``char_width`` summed)."""
    return len(text) if text.isascii() else sum(char_width(ch) for ch in text)


def separator(a: str, b: str) -> str:
    """What goes between ``a`` and ``b`` joined into one run of text: nothing where either side is
    unspaced script (the pieces of a Chinese sentence) or empty, else one space."""
    if not a or not b or is_unspaced(a[-1]) or is_unspaced(b[0]):
        return ""
    return " "


def join(a: str, b: str) -> str:
    """``a`` and ``b`` as one run of text (``separator`` between them)."""
    return a + separator(a, b) + b


def join_lines(text: str) -> str:
    """``text``'s lines joined into one (``join``): what a caption says, without its line breaks."""
    out = ""
    for line in text.split("\n"):
        out = join(out, line)
    return out
