"""The folders live sessions have written transcripts to, so that crash recovery looks in all of them.

Usage::

    from captionist.transcript.folders import remember_folder, remembered_folders
    remember_folder(folder)                  # when a session starts writing there (never raises)
    remembered_folders()                     # newest first; recovery searches these too

The folder of an interrupted session is not always the transcript folder configured at the next
start: the user may have chosen another one in Preferences while the session ran, the chosen folder
may have been unusable so the session went to the default one (``pipeline.transcript_target``), or
``captionist live -o`` wrote somewhere else. Searching only the configured folder left such a
session's journal unrecovered for ever.

The list is ``<data dir>/transcript-folders.json``: a JSON list of absolute paths, newest first, at
most ``MAX_FOLDERS``. It is rewritten (durably) only when a folder that is not already first starts
a session. A list that cannot be read counts as empty and one that cannot be written is skipped:
the configured folder is always searched anyway.
"""

from __future__ import annotations

import os
from pathlib import Path

from captionist import paths
from captionist.transcript.json_list import absolute_path, read_json_list, write_json_list

FILE_NAME = "transcript-folders.json"
MAX_FOLDERS = 32  # folders used since; an older one's crash has long been recovered
MAX_FILE_BYTES = 1 << 20  # far more than MAX_FOLDERS paths take; a bigger file is not ours


def folder_key(folder: Path) -> str:
    """What two spellings of one folder have in common (absolute; case-folded where the file system
    ignores case), to tell whether two paths name the same folder."""
    return os.path.normcase(os.path.abspath(folder))


def folders_file() -> Path:
    return paths.data_dir() / FILE_NAME


def remembered_folders() -> list[Path]:
    """The folders sessions were written to, newest first (existing or not); never raises."""
    folders: list[Path] = []
    for item in read_json_list(folders_file(), MAX_FILE_BYTES):
        folder = absolute_path(item)
        if folder is not None and folder not in folders:
            folders.append(folder)
    return folders[:MAX_FOLDERS]


def remember_folder(folder: Path) -> bool:
    """Put ``folder`` first in the list; False if the list could not be written (never raises)."""
    folder = Path(os.path.abspath(folder))
    known = remembered_folders()
    if known[:1] == [folder]:
        return True
    folders = [folder, *(f for f in known if f != folder)][:MAX_FOLDERS]
    return write_json_list(folders_file(), [str(f) for f in folders])
