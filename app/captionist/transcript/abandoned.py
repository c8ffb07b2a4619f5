"""Journals left on a disk that stopped answering, whose session another writer took over in full.

Usage::

    from captionist.transcript.abandoned import forget_abandoned, remember_abandoned, taken_over_by
    remember_abandoned(old_journal, new_transcript)   # when the saver gives a hung folder up
    forget_abandoned(old_journal)                      # when the old files could be removed after all
    taken_over_by(journal)                             # recovery: the transcript that has it all, or None

When a share stops answering mid-session, ``pipeline.transcript_saver`` carries the whole session
over to another folder and leaves the old writer behind; its journal ends where the share stopped.
If the share answers while the app runs, the old files are removed then. If it does not (the app
was closed first), the next start would find an unfinished journal there and rebuild a second,
partial transcript of a session that is already whole elsewhere. This list, kept in the app's data
folder, tells crash recovery to remove that half copy instead.

``<data dir>/abandoned-journals.json``: a JSON list of ``[journal, taken over by]`` absolute path
pairs, newest first, at most ``MAX_ENTRIES``. Never raises; an unreadable list counts as empty
(the half copy is then recovered as before: nothing is lost, only doubled).
"""

from __future__ import annotations

import os
from pathlib import Path

from captionist import paths
from captionist.transcript.folders import folder_key
from captionist.transcript.json_list import absolute_path, read_json_list, write_json_list

FILE_NAME = "abandoned-journals.json"
MAX_ENTRIES = 64
MAX_FILE_BYTES = 1 << 20


def abandoned_file() -> Path:
    return paths.data_dir() / FILE_NAME


def _entries() -> list[tuple[Path, Path]]:
    entries = []
    for item in read_json_list(abandoned_file(), MAX_FILE_BYTES):
        if isinstance(item, list) and len(item) == 2:
            journal, whole = absolute_path(item[0]), absolute_path(item[1])
            if journal is not None and whole is not None:
                entries.append((journal, whole))
    return entries[:MAX_ENTRIES]


def _write(entries: list[tuple[Path, Path]]) -> bool:
    return write_json_list(abandoned_file(), [[str(j), str(w)] for j, w in entries[:MAX_ENTRIES]])


def remember_abandoned(journal: Path, taken_over_by: Path) -> bool:
    """``journal`` was left behind; ``taken_over_by`` holds its whole session. False if not written."""
    journal, taken_over_by = Path(os.path.abspath(journal)), Path(os.path.abspath(taken_over_by))
    key = folder_key(journal)
    return _write([(journal, taken_over_by), *((j, w) for j, w in _entries() if folder_key(j) != key)])


def forget_abandoned(journal: Path) -> bool:
    """``journal`` is gone (removed, or dealt with by recovery); False if the list was not written."""
    key = folder_key(journal)
    entries = _entries()
    kept = [(j, w) for j, w in entries if folder_key(j) != key]
    return kept == entries or _write(kept)


def taken_over_by(journal: Path) -> Path | None:
    """The transcript that holds ``journal``'s whole session, if ``journal`` was left behind."""
    key = folder_key(journal)
    return next((w for j, w in _entries() if folder_key(j) == key), None)
