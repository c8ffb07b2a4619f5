"""CaptionUpdates for feed and alert tests, built the way the worker builds them."""

from __future__ import annotations

from captionist.engine import Token
from captionist.pipeline.events import AudioGap, CaptionUpdate


class UpdateMaker:
    """Consecutive updates of one session: ``make([" hello", " wor", "ld"], ends=[2])``."""

    def __init__(self) -> None:
        self.revision = 0
        self.text = ""
        self.ms = 0

    def make(self, pieces: list[str], ends: list[int] | None = None, final: bool = False,
             control: tuple[int, ...] = ()) -> CaptionUpdate:  # fmt: skip
        tokens = []
        for i, piece in enumerate(pieces):
            self.ms += 80
            is_control = i in control
            tokens.append(Token(100 + i, "" if is_control else piece, self.ms, is_control))
        new_text = "".join(t.piece for t in tokens)
        self.text += new_text
        if new_text:
            self.revision += 1
        return CaptionUpdate(
            self.revision, self.text, new_text, tokens, final=final, utterance_ends=ends or []
        )

    def gap(self, start_ms: int, end_ms: int) -> CaptionUpdate:
        return CaptionUpdate(self.revision, self.text, "", [], gap=AudioGap(start_ms, end_ms))
