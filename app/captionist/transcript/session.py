"""``SessionWriter``: the crash-safe transcript file of one live session.

On-disk layout, in the session folder (``stem`` = the start time, ``2026-11-29 09-30-00``; a
`` (2)``, `` (3)`` ... suffix is added if that name is taken)::

    <stem>.<fmt>            the human transcript (srt, vtt, txt, md or json)
    <stem>.journal.jsonl    the token journal (see ``captionist.transcript.journal``)

Write order per ``add_tokens`` call: committed text tokens, and the ends of utterance between
them, go to the journal first (one write + ``fsync``), so a ``kill -9`` at any moment loses
nothing the app has shown. Each caption that is
finished (see ``segment.split_finished``) is then appended to the human file (``json`` is
rewritten atomically instead, since it cannot be appended to). ``close`` rewrites the human file
atomically from all captions (temp file, ``fsync``, ``os.replace``) and marks the journal ended.
After a crash the human file lacks at most the caption that was still open; ``recovery`` (or
``export``) rebuilds it, in any format, from the journal.

The folder stays clean: the human file is created with the first caption, so a session without
text leaves no file at all, and ``close`` removes the journal once the transcript is complete and
flushed. Markdown and plain (untimed) text cannot be parsed back into timed captions (see
``journal_needed``), so their finished journal moves into the app's data folder instead
(``captionist.transcript.archive``), where ``export`` finds it.

``write_gap`` marks audio that was dropped (the engine fell behind): the open caption is finished,
a gap record goes to the journal and a caption ``[7.5 s of audio not transcribed: <reason>]``
covering the dropped span to the human file; the next words start a new line. Rebuilding from the
journal gives the same captions.

The folder is created if it is missing, with its missing parents unless ``create_parents`` is
False: then a folder the user chose on a drive that is not plugged in (its mount point or drive
letter gone) fails, instead of being made again, parents and all, on the local disk.

Write failures (full disk, read-only or missing folder) raise ``TranscriptWriteError``, an
``OSError`` with a one-line message. Tokens whose journal write failed stay buffered and are
written with the next successful call; a human file that failed is rewritten whole next time.
``move_to`` carries a session whose folder has become unwritable over to another folder, from the
journal's copy in memory.

A ``SessionWriter`` is owned by one thread.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from captionist.atomic_file import fsync_dir, replace_file
from captionist.engine import Token
from captionist.transcript.archive import archive_journal, journal_for
from captionist.transcript.caption import Caption
from captionist.transcript.journal import (
    JOURNAL_SUFFIX,
    Gap,
    JournalContents,
    JournalItem,
    JournalWriter,
    TranscriptWriteError,
    read_journal,
)
from captionist.transcript.parse import parse
from captionist.transcript.render import (
    check_format,
    render,
    render_fragment,
    render_header,
)
from captionist.transcript.segment import (
    UTTERANCE_END,
    Item,
    caption_of,
    group_tokens,
    segment_tokens,
    split_finished,
    with_utterance_ends,
)

STEM_FORMAT = "%Y-%m-%d %H-%M-%S"


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` so that readers see either the old or the new file, never half."""
    try:
        replace_file(path, text, durable=True)
    except OSError as exc:
        raise TranscriptWriteError(path, exc) from exc


def _append_durable(path: Path, text: str) -> None:
    try:
        with open(path, "a", encoding="utf-8", newline="\n") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
    except OSError as exc:
        raise TranscriptWriteError(path, exc) from exc


def _keep(item: Item) -> bool:
    """Journal and segment text tokens and ends of utterance; control tokens only move the clock."""
    return not isinstance(item, Token) or (not item.is_control and bool(item.piece))


def _free_stem(folder: Path, stem: str, fmt: str) -> str:
    candidate, n = stem, 1
    while (folder / f"{candidate}.{fmt}").exists() or (folder / f"{candidate}{JOURNAL_SUFFIX}").exists():
        n += 1
        candidate = f"{stem} ({n})"
    return candidate


def journal_needed(fmt: str, timestamps: bool) -> bool:
    """Whether a finished session's journal must be kept (in the archive, see
    ``captionist.transcript.archive``): Markdown and plain (untimed) text cannot be parsed back into
    timed captions, so only the journal can export them to another format. Every other transcript
    is complete on its own and its journal is removed."""
    return fmt == "md" or (fmt == "txt" and not timestamps)


def remove_quietly(path: Path) -> None:
    """Remove ``path`` if it is there; a file that cannot be removed is left (it is redundant)."""
    try:
        path.unlink(missing_ok=True)
    except OSError:
        return
    fsync_dir(path.parent)


def gap_caption(gap: Gap) -> Caption:
    """The caption that stands for dropped audio; it starts a line of its own."""
    return Caption(gap.start_ms, gap.end_ms, gap.text, starts_utterance=True)


def captions_of_items(
    items: Sequence[JournalItem],
    *,
    token_ms: int,
    max_chars: int = 42,
    max_lines: int = 2,
    pause_ms: int = 800,
) -> list[Caption]:
    """Captions of a journal's items: each gap becomes its own caption and the words after it start
    a new line, exactly as ``SessionWriter`` wrote them live."""
    seg = {"token_ms": token_ms, "max_chars": max_chars, "max_lines": max_lines, "pause_ms": pause_ms}
    captions: list[Caption] = []
    run: list[Item] = []
    for item in items:
        if isinstance(item, Gap):
            captions += segment_tokens(run, **seg)
            captions.append(gap_caption(item))
            run = [UTTERANCE_END]
        else:
            run.append(item)
    return captions + segment_tokens(run, **seg)


def captions_of_contents(contents: JournalContents) -> tuple[list[Caption], dict[str, Any]]:
    """All captions of a read journal and its (cleaned) header."""
    h = contents.header
    seg = {k: h[k] for k in ("max_chars", "max_lines", "pause_ms")}
    return captions_of_items(contents.items, token_ms=contents.token_ms, **seg), h


class SessionWriter:
    """Writes one live session's transcript as tokens are committed (see the module docstring)."""

    def __init__(
        self,
        folder: Path,
        fmt: str,
        *,
        token_ms: int,
        started: datetime | None = None,
        timestamps: bool = True,
        meta: dict | None = None,
        max_chars: int = 42,
        max_lines: int = 2,
        pause_ms: int = 800,
        create_parents: bool = True,
    ) -> None:
        self.fmt = check_format(fmt)
        self.started = started or datetime.now()
        self.timestamps = timestamps
        if token_ms < 1:
            raise ValueError(f"token_ms must be >= 1; got {token_ms}")
        self._seg = {
            "max_chars": max_chars,
            "max_lines": max_lines,
            "pause_ms": pause_ms,
            "token_ms": token_ms,
        }
        self.meta: dict[str, Any] = {"started": self.started.isoformat(timespec="seconds"), **(meta or {})}
        folder = Path(folder)
        stem = self._free_stem_in(folder, create_parents)
        self.path = folder / f"{stem}.{self.fmt}"
        self.journal_path = folder / f"{stem}{JOURNAL_SUFFIX}"
        header = {"started": self.meta["started"], "fmt": self.fmt, "timestamps": timestamps, **self._seg}
        self._journal = JournalWriter(self.journal_path, {**header, "meta": self.meta})
        self._captions: list[Caption] = []
        self._pending: list[Item] = []
        self._clock_ms = 0
        self._human_dirty = True  # the human file must be (re)written whole
        self._closed = False  # the human file is created with the first caption: none for a silent session

    def _free_stem_in(self, folder: Path, create_parents: bool) -> str:
        """Make ``folder`` (with its missing parents if ``create_parents``) and pick the session's
        file stem there, free of other sessions' files; raises ``TranscriptWriteError``."""
        try:
            folder.mkdir(parents=create_parents, exist_ok=True)
        except OSError as exc:
            raise TranscriptWriteError(folder, exc) from exc
        return _free_stem(folder, self.started.strftime(STEM_FORMAT), self.fmt)

    @property
    def captions(self) -> list[Caption]:
        """Finished captions so far (the open one is not included)."""
        return list(self._captions)

    def add_tokens(
        self, tokens: Sequence[Token], *, clock_ms: int | None = None, utterance_ends: Sequence[int] = ()
    ) -> None:
        """Record the tokens one stream update committed; durable when this returns.

        ``utterance_ends``: where the model ended an utterance, as counts of ``tokens`` before
        each end (``len(tokens)``: after the last one); the next caption starts there. Control
        tokens are not stored but their times advance the stream clock, which finishes the open
        caption after a pause. ``clock_ms`` (optional) advances it too: pass it only if no text
        token committed later can have an earlier ``time_ms``. Raises ``TranscriptWriteError`` if
        the journal cannot be written; the tokens stay buffered and go out with the next call
        that succeeds.
        """
        if self._closed:
            raise ValueError("this transcript session is already closed")
        text = [t for t in with_utterance_ends(tokens, utterance_ends) if _keep(t)]
        for t in tokens:
            self._clock_ms = max(self._clock_ms, t.time_ms)
        if clock_ms is not None:
            self._clock_ms = max(self._clock_ms, clock_ms)
        self._pending.extend(text)
        if text or self._journal.pending_bytes:
            self._journal.append_tokens(text)
        groups, self._pending = split_finished(self._pending, self._clock_ms, **self._seg)
        new = [
            caption_of(g, token_ms=self._seg["token_ms"], max_chars=self._seg["max_chars"]) for g in groups
        ]
        if new:
            self._sync_human(new)

    def write_gap(self, start_s: float, end_s: float, reason: str) -> None:
        """Mark audio from ``start_s`` to ``end_s`` (seconds of stream time) as dropped for ``reason``
        (e.g. "the engine fell behind"); durable when this returns.

        The open caption is finished first, so the mark sits where the audio went missing. Raises
        ``ValueError`` for times that are not finite with 0 <= start <= end, and
        ``TranscriptWriteError`` if the journal cannot be written (the gap is kept for the next call).
        """
        if self._closed:
            raise ValueError("this transcript session is already closed")
        if not (math.isfinite(start_s) and math.isfinite(end_s) and 0 <= start_s <= end_s):
            raise ValueError(f"a gap needs finite times with 0 <= start <= end; got {start_s}..{end_s} s")
        gap = Gap(round(start_s * 1000), round(end_s * 1000), " ".join(str(reason).split()) or "unknown")
        self._clock_ms = max(self._clock_ms, gap.end_ms)
        max_chars, token_ms = self._seg["max_chars"], self._seg["token_ms"]
        new = [
            caption_of(g, token_ms=token_ms, max_chars=max_chars)
            for g in group_tokens(self._pending, **self._seg)
        ]
        self._pending = [UTTERANCE_END]  # the words after the gap start a new line
        try:
            self._journal.append_gap(gap)
        except TranscriptWriteError:  # kept as the journal will have it: the next write puts it out
            self._captions.extend([*new, gap_caption(gap)])
            self._human_dirty = True
            raise
        self._sync_human([*new, gap_caption(gap)])

    def move_to(self, folder: Path) -> None:
        """Go on writing this session in ``folder`` because its own folder cannot be written (its
        drive was pulled out, its disk is full): a journal there gets everything committed so far,
        from memory, and the human file is written there whole. Then the old folder's two files are
        removed where that can be done (a full disk gets its space back); on a drive that is gone
        they stay, and if it comes back the next start recovers that part there too. Raises
        ``TranscriptWriteError``, and then nothing has changed.
        """
        if self._closed:
            raise ValueError("this transcript session is already closed")
        folder = Path(folder)
        stem = self._free_stem_in(folder, create_parents=True)
        journal = self._journal.copy_to(folder / f"{stem}{JOURNAL_SUFFIX}")
        self._journal.close()
        old = (self.path, self.journal_path)
        self._journal = journal
        self.path, self.journal_path = folder / f"{stem}.{self.fmt}", journal.path
        for path in old:  # all of it is in the new folder now: free the space, leave no half copy
            remove_quietly(path)
        self._human_dirty = True
        if self._captions:
            try:
                write_atomic(self.path, self._render_partial())
                self._human_dirty = False
            except TranscriptWriteError:
                pass  # the journal holds it all; the next caption writes the file whole

    def abandon(self) -> None:
        """Give this session's files up: its disk stopped answering and another writer took the
        session over (``pipeline.transcript_saver``). Closes the journal and removes both files
        where that can be done; nothing can be written here afterwards."""
        self._journal.close()
        self._closed = True
        for path in (self.path, self.journal_path):
            remove_quietly(path)

    def _sync_human(self, new: list[Caption]) -> None:
        if not new:
            return
        first_index = len(self._captions) + 1
        previous = self._captions[-1] if self._captions else None
        self._captions.extend(new)
        if self._human_dirty or self.fmt == "json":
            self._human_dirty = True
            write_atomic(self.path, self._render_partial())
            self._human_dirty = False
            return
        parts = []
        for i, cap in enumerate(new, start=first_index):
            parts.append(render_fragment(self.fmt, cap, i, previous, timestamps=self.timestamps))
            previous = cap
        try:
            _append_durable(self.path, "".join(parts))
        except TranscriptWriteError:
            self._human_dirty = True
            raise

    def _render_partial(self) -> str:
        """The human file for the finished captions so far, without the closing footer."""
        if self.fmt == "json":
            return render("json", self._captions, meta=self.meta)
        parts = [render_header(self.fmt, meta=self.meta)]
        previous: Caption | None = None
        for i, cap in enumerate(self._captions, start=1):
            parts.append(render_fragment(self.fmt, cap, i, previous, timestamps=self.timestamps))
            previous = cap
        return "".join(parts)

    def close(self) -> Path | None:
        """Write the open caption, rewrite the human file atomically, then end the journal and
        remove it, or move it to the archive when it is still needed (``journal_needed``;
        ``journal_path`` then names where it went; if the archive cannot be written it stays beside
        the transcript, and the next start moves it).

        Returns the transcript's path, or None when the session had no text: then neither a
        transcript nor a journal is left behind. Raises ``TranscriptWriteError`` if the transcript
        cannot be written; the journal is then kept, so the next start recovers the session.
        """
        if self._closed:
            return self.path if self._captions else None
        if self._journal.pending_bytes:
            self._journal.append_tokens([])
        max_chars, token_ms = self._seg["max_chars"], self._seg["token_ms"]
        self._captions.extend(
            caption_of(g, token_ms=token_ms, max_chars=max_chars)
            for g in group_tokens(self._pending, **self._seg)
        )
        self._pending = []
        if not self._captions:
            self._journal.close()
            self._closed = True
            remove_quietly(self.path)
            remove_quietly(self.journal_path)
            return None
        write_atomic(self.path, render(self.fmt, self._captions, timestamps=self.timestamps, meta=self.meta))
        self._journal.append_end(datetime.now().isoformat(timespec="seconds"))
        self._journal.close()
        self._closed = True
        if not journal_needed(self.fmt, self.timestamps):
            remove_quietly(self.journal_path)
        else:
            try:
                self.journal_path = archive_journal(self.journal_path, self.path)
            except TranscriptWriteError:
                pass  # kept beside the transcript: nothing is lost and export still finds it
        return self.path

    @staticmethod
    def captions_from_journal(journal: Path) -> tuple[list[Caption], dict[str, Any]]:
        """All captions of a session journal and its header (fmt, timestamps, meta, ...)."""
        return captions_of_contents(read_journal(journal))

    @staticmethod
    def export(
        journal_or_path: Path,
        dest: Path,
        fmt: str,
        *,
        timestamps: bool | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> None:
        """Write a session (its journal, or a transcript file) to ``dest`` in format ``fmt``.

        A transcript file whose journal lies next to it or in the archive (``archive.journal_for``)
        is exported from the journal (lossless); otherwise srt/vtt/json/timestamped txt files are
        parsed. ``timestamps`` defaults to the session's setting (``True`` for parsed files);
        ``meta`` (model, sources) stands in for a parsed file's, which parsing does not keep.
        """
        fmt = check_format(fmt)
        src = Path(journal_or_path)
        journal = src if src.name.endswith(JOURNAL_SUFFIX) else journal_for(src)
        if journal is not None and journal.exists():
            captions, header = SessionWriter.captions_from_journal(journal)
            meta = header.get("meta") or {}
            ts = bool(header.get("timestamps", True)) if timestamps is None else timestamps
        else:
            try:
                text = src.read_text(encoding="utf-8")
            except OSError as exc:
                raise ValueError(f"cannot read transcript {src}: {exc.strerror or exc}") from None
            captions, meta = parse(src.suffix, text), dict(meta or {})
            ts = True if timestamps is None else timestamps
        write_atomic(Path(dest), render(fmt, captions, timestamps=ts, meta=meta))
