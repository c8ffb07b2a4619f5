"""Transcripts: captions from engine tokens, rendering/parsing in five formats, crash-safe sessions.

Usage::

    from captionist.transcript import Caption, segment_tokens, render, FORMATS, SessionWriter, parse
    items = with_utterance_ends(transcript.tokens, [i for i, e in transcript.events if e == END_OF_UTTERANCE])
    captions = segment_tokens(items, token_ms=model.token_ms)   # max_chars=42, max_lines=2, pause_ms=800
    srt = render("srt", captions)
    assert parse("srt", srt) == captions

    w = SessionWriter(folder, "srt", token_ms=model.token_ms)   # live: folder/"2026-11-29 09-30-00.srt"
    w.add_tokens(update.new_tokens, utterance_ends=[3])     # on every committed stream update
    w.close()
    SessionWriter.export(w.journal_path, dest, "vtt")       # any format, rebuilt from the journal
"""

from captionist.transcript.caption import Caption
from captionist.transcript.journal import JOURNAL_SUFFIX, TranscriptWriteError, read_journal
from captionist.transcript.parse import parse
from captionist.transcript.render import FORMATS, check_format, render
from captionist.transcript.segment import (
    UTTERANCE_END,
    UtteranceEnd,
    segment_tokens,
    split_finished,
    with_utterance_ends,
    wrap_text,
)
from captionist.transcript.session import SessionWriter

__all__ = [
    "FORMATS",
    "JOURNAL_SUFFIX",
    "Caption",
    "SessionWriter",
    "TranscriptWriteError",
    "UTTERANCE_END",
    "UtteranceEnd",
    "check_format",
    "parse",
    "read_journal",
    "render",
    "segment_tokens",
    "split_finished",
    "with_utterance_ends",
    "wrap_text",
]
