"""Token builders shared by the transcript tests."""

from __future__ import annotations

from captionist.engine import Token

TOKEN_MS = 80  # the token duration the test tokens are laid out on (Voxtral's and FastConformer's)


def words(text: str, start_ms: int = 0, step_ms: int = TOKEN_MS, first_id: int = 1000) -> list[Token]:
    """One text token per word of ``text`` (with its leading space), ``step_ms`` apart."""
    return [Token(first_id + i, f" {w}", start_ms + i * step_ms) for i, w in enumerate(text.split())]


def pads(start_ms: int, end_ms: int) -> list[Token]:
    """Control tokens (empty pieces) every 80 ms in [start_ms, end_ms)."""
    return [Token(32, "", t, True) for t in range(start_ms, end_ms, TOKEN_MS)]


def text_of(captions) -> list[str]:
    """All words of ``captions`` in order."""
    return " ".join(c.text for c in captions).split()
