"""Turn engine tokens into subtitle captions.

Rules, applied left to right (a caption boundary, once made, never moves, so segmenting a
stream piece by piece gives the same captions as segmenting it whole):

* control tokens (``Token.is_control``) contribute no text;
* a new caption starts at an end of utterance (an ``UtteranceEnd`` marker in the token
  sequence, placed where the model reported ``StreamEvent.END_OF_UTTERANCE``); that caption's
  ``Caption.starts_utterance`` is set, so plain-text transcripts start a new line there;
* a new caption starts when the silence between two text tokens reaches ``pause_ms``
  (silence = next token's time - (previous text token's time + one token of ``token_ms``));
* a new caption starts at the first new word after a sentence end (``. ! ? …``, their CJK
  forms, ``؟ ۔ । ॥``, optionally followed by closing quotes or brackets);
* a caption's text, word-wrapped at ``max_chars`` columns (a character is one column, a wide
  Chinese, Japanese or Korean one two: ``unspaced.width``), has at most ``max_lines`` lines; a
  word that would overflow moves whole to the next caption, and only a word longer than a full
  caption is split. In Chinese and Japanese, written without spaces, each place a line may break
  (``unspaced.may_break``) ends a word, so a caption breaks between characters and a new one
  starts after a sentence's "。" as after an English ".".

``token_ms`` is the model's token duration (``Model.token_ms``); every function takes it, since
models differ. Times: ``start_ms`` is the first text token's time, ``end_ms`` the last text
token's time plus one token. Control tokens matter for timing in ``split_finished``: they
advance the stream clock, so a trailing caption counts as finished once the clock is
``pause_ms`` past it (or once an end of utterance follows it).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from captionist.engine import Token
from captionist.transcript.caption import Caption
from captionist.transcript.unspaced import char_width, may_break, pieces, width

_SENTENCE_END = ".!?…。！？؟۔।॥"  # and the Arabic question mark, the Urdu full stop, Hindi's dandas
_CLOSERS = "\"')]}»”’」』"


@dataclass(frozen=True)
class UtteranceEnd:
    """Marks, inside a token sequence, where the model ended an utterance."""


UTTERANCE_END = UtteranceEnd()
Item = Token | UtteranceEnd


@dataclass
class TokenGroup:
    """The text tokens of one caption; ``starts_utterance`` when an end of utterance precedes it."""

    tokens: list[Token] = field(default_factory=list)
    starts_utterance: bool = False


def with_utterance_ends(tokens: Sequence[Token], ends: Iterable[int]) -> list[Item]:
    """``tokens`` with an ``UTTERANCE_END`` inserted before index ``i`` for each ``i`` in ``ends``
    (``len(tokens)``: after the last one), as ``Transcript.events`` positions them."""
    at = sorted(set(ends))
    out: list[Item] = []
    k = 0
    for i, tok in enumerate(tokens):
        while k < len(at) and at[k] <= i:
            out.append(UTTERANCE_END)
            k += 1
        out.append(tok)
    out += [UTTERANCE_END] * (len(at) - k)
    return out


def _units(text: str) -> list[tuple[str, bool]]:
    """``text`` as the pieces a line may break between, each with whether a space comes before it."""
    return [(piece, k == 0) for word in text.split() for k, piece in enumerate(pieces(word))]


def _cut(unit: str, max_chars: int) -> list[str]:
    """``unit`` in pieces of at most ``max_chars`` columns (a wide character that alone is wider
    stands alone); a combining mark stays with its character."""
    pieces = [""]
    for ch in unit:
        if pieces[-1] and char_width(ch) and width(pieces[-1]) + char_width(ch) > max_chars:
            pieces.append("")
        pieces[-1] += ch
    return pieces


def wrap_text(text: str, max_chars: int) -> list[str]:
    """Greedy word wrap of ``text`` into lines of at most ``max_chars`` columns.

    Whitespace runs collapse to one space; a line breaks at a space or, in Chinese and Japanese,
    between characters (``unspaced``), and wide characters count two columns; a word longer than
    ``max_chars`` is cut into pieces.
    """
    if max_chars < 1:
        raise ValueError(f"max_chars must be >= 1; got {max_chars}")
    lines: list[str] = []
    line, used = "", 0  # the line being filled and its width
    for unit, spaced in _units(text):
        unit_width = width(unit)
        cut = _cut(unit, max_chars) if unit_width > max_chars else [unit]
        for k, piece in enumerate(cut):
            w = unit_width if len(cut) == 1 else width(piece)
            gap = 1 if spaced and k == 0 and line else 0
            if line and k == 0 and used + gap + w <= max_chars:
                line, used = line + " " * gap + piece, used + gap + w
            else:
                if line:
                    lines.append(line)
                line, used = piece, w
    if line:
        lines.append(line)
    return lines


def ends_sentence(piece: str) -> bool:
    """True when ``piece`` ends with sentence-final punctuation (closing quotes allowed after it)."""
    stripped = piece.rstrip().rstrip(_CLOSERS)
    return bool(stripped) and stripped[-1] in _SENTENCE_END


_UNSPACED_END = "。！？"  # Chinese and Japanese: the next sentence follows without a space


def sentence_starts(text: str) -> list[int]:
    """Where in ``text`` a sentence begins after another one ended: after its final punctuation
    and closing quotes, at the first character of the next word. "3.5" and a sentence end at the
    very end of ``text`` (the next word is not there yet) are not one."""
    starts = []
    i, n = 0, len(text)
    while i < n:
        if text[i] not in _SENTENCE_END:
            i += 1
            continue
        unspaced = text[i] in _UNSPACED_END
        j = i + 1
        while j < n and (text[j] in _SENTENCE_END or text[j] in _CLOSERS):
            j += 1
        k = j
        while k < n and text[k].isspace():
            k += 1
        if k < n and (k > j or unspaced):
            starts.append(k)
        i = k if k > i else i + 1
    return starts


def _text_of(tokens: Sequence[Token]) -> str:
    return "".join(t.piece for t in tokens)


def _check_limits(max_chars: int, max_lines: int, token_ms: int) -> None:
    if max_lines < 1:
        raise ValueError(f"max_lines must be >= 1; got {max_lines}")
    if max_chars < 1:
        raise ValueError(f"max_chars must be >= 1; got {max_chars}")
    if token_ms < 1:
        raise ValueError(f"token_ms must be >= 1; got {token_ms}")


def _groups(
    items: Sequence[Item], max_chars: int, max_lines: int, pause_ms: int, token_ms: int
) -> tuple[list[TokenGroup], bool]:
    """The caption groups of ``items`` and whether an end of utterance closed the last one."""
    _check_limits(max_chars, max_lines, token_ms)

    def fits(tokens: Sequence[Token]) -> bool:
        text = _text_of(tokens)
        return width(text) <= max_chars or len(wrap_text(text, max_chars)) <= max_lines  # 1 line: fits

    groups: list[TokenGroup] = []
    cur: list[Token] = []
    word_start = 0  # index in ``cur`` where the word being built begins
    sentence_end = False
    utterance_start = False  # the next group opens an utterance
    closed = False

    def close(tokens: list[Token]) -> None:
        nonlocal utterance_start
        groups.append(TokenGroup(tokens, utterance_start))
        utterance_start = False

    for item in items:
        if isinstance(item, UtteranceEnd):
            if cur:
                close(cur)
                cur = []
            utterance_start, sentence_end, closed = True, False, True
            continue
        tok = item
        if tok.is_control or not tok.piece:
            continue
        last = cur[-1].piece[-1:] if cur else ""
        new_word = tok.piece[:1].isspace() or bool(last and may_break(last, tok.piece[0]))
        if cur:
            silence = tok.time_ms - (cur[-1].time_ms + token_ms)
            if silence >= pause_ms or (sentence_end and new_word):
                close(cur)
                cur = []
        if not cur and not tok.piece.strip():
            continue  # whitespace-only piece at a caption start carries nothing
        closed = False
        if not cur or new_word:
            word_start = len(cur)
        candidate = cur + [tok]
        if not cur or fits(candidate):
            cur = candidate
        elif new_word or word_start == 0:
            close(cur)  # the caption is full (or one word fills it): start afresh
            cur = [tok]
            word_start = 0
        else:
            moved = cur[word_start:] + [tok]
            close(cur[:word_start])
            if fits(moved):
                cur = moved
            else:
                close(cur[word_start:])
                cur = [tok]
            word_start = 0
        # a closing quote or bracket in a token of its own keeps the sentence ended
        sentence_end = ends_sentence(tok.piece) or (sentence_end and not tok.piece.strip().strip(_CLOSERS))
    if cur:
        close(cur)
    return [g for g in groups if _text_of(g.tokens).strip()], closed


def group_tokens(
    items: Sequence[Item], *, token_ms: int, max_chars: int = 42, max_lines: int = 2, pause_ms: int = 800
) -> list[TokenGroup]:
    """The text tokens of ``items``, grouped one ``TokenGroup`` per caption (see the module rules)."""
    return _groups(items, max_chars, max_lines, pause_ms, token_ms)[0]


def caption_of(group: TokenGroup, *, token_ms: int, max_chars: int = 42) -> Caption:
    """The caption for one token group: wrapped text, first token's time to last token's end."""
    if not group.tokens:
        raise ValueError("a caption needs at least one token")
    text = "\n".join(wrap_text(_text_of(group.tokens), max_chars))
    end_ms = group.tokens[-1].time_ms + token_ms
    return Caption(group.tokens[0].time_ms, end_ms, text, starts_utterance=group.starts_utterance)


def segment_tokens(
    items: Sequence[Item], *, token_ms: int, max_chars: int = 42, max_lines: int = 2, pause_ms: int = 800
) -> list[Caption]:
    """Captions for ``items`` (tokens in stream order, with ``UTTERANCE_END`` markers) following the
    module's rules."""
    groups = _groups(items, max_chars, max_lines, pause_ms, token_ms)[0]
    return [caption_of(g, token_ms=token_ms, max_chars=max_chars) for g in groups]


def split_finished(
    items: Sequence[Item],
    clock_ms: int,
    *,
    token_ms: int,
    max_chars: int = 42,
    max_lines: int = 2,
    pause_ms: int = 800,
) -> tuple[list[TokenGroup], list[Item]]:
    """Split a stream's pending items into finished caption groups and the still-open rest.

    Every group but the last is finished; the last is finished too once an end of utterance
    follows it, or once ``clock_ms`` (the time of the newest token seen, control tokens included)
    is ``pause_ms`` past its end, because any later text token must then start a new caption.
    Returns ``(finished_groups, open_items)``; feeding ``open_items`` back in (plus what comes
    next) continues the segmentation exactly.
    """
    groups, closed = _groups(items, max_chars, max_lines, pause_ms, token_ms)
    if not groups:
        return [], [UTTERANCE_END] if closed else []
    last = groups[-1]
    if closed or clock_ms - (last.tokens[-1].time_ms + token_ms) >= pause_ms:
        # the next caption opens an utterance if an end of utterance came after the last group
        return groups, [UTTERANCE_END] if closed else []
    head: list[Item] = [UTTERANCE_END] if last.starts_utterance else []
    return groups[:-1], head + list(last.tokens)
