"""Turn engine tokens into subtitle captions.

Rules, applied left to right (a caption boundary, once made, never moves, so segmenting a
stream piece by piece gives the same captions as segmenting it whole):

* control tokens (``Token.is_control``) contribute no text;
* a new caption starts when the silence between two text tokens reaches ``pause_ms``
  (silence = next token's time - (previous text token's time + one token, 80 ms));
* a new caption starts at the first new word after a sentence end (``. ! ? …`` and their CJK
  forms, optionally followed by closing quotes or brackets);
* a caption's text, word-wrapped at ``max_chars`` characters (Unicode code points, not bytes),
  has at most ``max_lines`` lines; a word that would overflow moves whole to the next caption,
  and only a word longer than a full caption is split.

Times: ``start_ms`` is the first text token's time, ``end_ms`` the last text token's time plus
one token (80 ms). Control tokens matter for timing in ``split_finished``: they advance the
stream clock, so a trailing caption counts as finished once the clock is ``pause_ms`` past it.
"""

from __future__ import annotations

from collections.abc import Sequence

from captionist.engine import TOKEN_MS, Token
from captionist.transcript.caption import Caption

_SENTENCE_END = ".!?…。！？"
_CLOSERS = "\"')]}»”’」』"


def wrap_text(text: str, max_chars: int) -> list[str]:
    """Greedy word wrap of ``text`` into lines of at most ``max_chars`` characters.

    Whitespace runs collapse to one space; a word longer than ``max_chars`` is cut into pieces.
    """
    if max_chars < 1:
        raise ValueError(f"max_chars must be >= 1; got {max_chars}")
    lines: list[str] = []
    line = ""
    for word in text.split():
        while len(word) > max_chars:
            if line:
                lines.append(line)
                line = ""
            lines.append(word[:max_chars])
            word = word[max_chars:]
        if not word:
            continue
        if not line:
            line = word
        elif len(line) + 1 + len(word) <= max_chars:
            line = f"{line} {word}"
        else:
            lines.append(line)
            line = word
    if line:
        lines.append(line)
    return lines


def ends_sentence(piece: str) -> bool:
    """True when ``piece`` ends with sentence-final punctuation (closing quotes allowed after it)."""
    stripped = piece.rstrip().rstrip(_CLOSERS)
    return bool(stripped) and stripped[-1] in _SENTENCE_END


def _text_of(group: Sequence[Token]) -> str:
    return "".join(t.piece for t in group)


def group_tokens(
    tokens: Sequence[Token], *, max_chars: int = 42, max_lines: int = 2, pause_ms: int = 800
) -> list[list[Token]]:
    """The text tokens of ``tokens``, grouped one list per caption (see the module rules)."""
    if max_lines < 1:
        raise ValueError(f"max_lines must be >= 1; got {max_lines}")
    if max_chars < 1:
        raise ValueError(f"max_chars must be >= 1; got {max_chars}")

    def fits(group: Sequence[Token]) -> bool:
        return len(wrap_text(_text_of(group), max_chars)) <= max_lines

    groups: list[list[Token]] = []
    cur: list[Token] = []
    word_start = 0  # index in ``cur`` where the word being built begins
    sentence_end = False
    for tok in tokens:
        if tok.is_control or not tok.piece:
            continue
        new_word = tok.piece[:1].isspace()
        if cur:
            silence = tok.time_ms - (cur[-1].time_ms + TOKEN_MS)
            if silence >= pause_ms or (sentence_end and new_word):
                groups.append(cur)
                cur = []
        if not cur and not tok.piece.strip():
            continue  # whitespace-only piece at a caption start carries nothing
        if not cur or new_word:
            word_start = len(cur)
        candidate = cur + [tok]
        if not cur or fits(candidate):
            cur = candidate
        elif new_word or word_start == 0:
            groups.append(cur)  # the caption is full (or one word fills it): start afresh
            cur = [tok]
            word_start = 0
        else:
            moved = cur[word_start:] + [tok]
            groups.append(cur[:word_start])
            if fits(moved):
                cur = moved
            else:
                groups.append(cur[word_start:])
                cur = [tok]
            word_start = 0
        sentence_end = ends_sentence(tok.piece) or (sentence_end and not tok.piece.strip())
    if cur:
        groups.append(cur)
    return [g for g in groups if _text_of(g).strip()]


def caption_of(group: Sequence[Token], *, max_chars: int = 42) -> Caption:
    """The caption for one token group: wrapped text, first token's time to last token's end."""
    if not group:
        raise ValueError("a caption needs at least one token")
    text = "\n".join(wrap_text(_text_of(group), max_chars))
    return Caption(group[0].time_ms, group[-1].time_ms + TOKEN_MS, text)


def segment_tokens(
    tokens: Sequence[Token], *, max_chars: int = 42, max_lines: int = 2, pause_ms: int = 800
) -> list[Caption]:
    """Captions for ``tokens`` (in stream order) following the module's rules."""
    groups = group_tokens(tokens, max_chars=max_chars, max_lines=max_lines, pause_ms=pause_ms)
    return [caption_of(g, max_chars=max_chars) for g in groups]


def split_finished(
    tokens: Sequence[Token],
    clock_ms: int,
    *,
    max_chars: int = 42,
    max_lines: int = 2,
    pause_ms: int = 800,
) -> tuple[list[list[Token]], list[Token]]:
    """Split a stream's pending tokens into finished caption groups and the still-open rest.

    Every group but the last is finished; the last is finished too once ``clock_ms`` (the time of
    the newest token seen, control tokens included) is ``pause_ms`` past its end, because any later
    text token must then start a new caption. Returns ``(finished_groups, open_tokens)``.
    """
    groups = group_tokens(tokens, max_chars=max_chars, max_lines=max_lines, pause_ms=pause_ms)
    if not groups:
        return [], []
    last = groups[-1]
    if clock_ms - (last[-1].time_ms + TOKEN_MS) >= pause_ms:
        return groups, []
    return groups[:-1], list(last)
