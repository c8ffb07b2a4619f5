"""The info banner's lines about the transcript file: a folder that failed, a file behind the captions."""

from __future__ import annotations

import errno
import re
from pathlib import Path

from captionist.pipeline.transcript_target import FolderFallback
from captionist.ui.banner import Banner, BannerKind, Problem
from captionist.ui.transcript_notices import TranscriptNotices


def _notices(qtbot) -> tuple[Banner, TranscriptNotices]:
    banner = Banner(BannerKind.INFO)
    qtbot.addWidget(banner)
    return banner, TranscriptNotices(banner)


def test_a_file_behind_the_captions_is_said_once_and_withdrawn(qtbot) -> None:
    banner, notices = _notices(qtbot)
    notices.unsaved(2.4)
    assert banner.problems() == [Problem.TRANSCRIPT_UNSAVED]
    text = banner.text()
    assert re.fullmatch(
        r"Saving the transcript is slow: the captions since \d\d:\d\d:\d\d are not in the file yet\. "
        r"Its disk is slow or not answering; the captions go on, and the file catches up when the "
        r"disk answers\.",
        text,
    )
    notices.unsaved(3.5)
    assert banner.text() == text  # not rewritten every tick
    banner.dismiss()
    notices.unsaved(4.6)
    assert banner.problems() == []  # the user closed it: not shown again for the same delay
    notices.unsaved(0.0)
    notices.unsaved(2.0)  # behind again, later: said again
    assert banner.problems() == [Problem.TRANSCRIPT_UNSAVED]
    notices.unsaved(0.0)
    assert banner.problems() == [] and banner.isHidden()


def test_a_new_session_clears_both_lines(qtbot) -> None:
    banner, notices = _notices(qtbot)
    full = FolderFallback(Path("/media/usb"), Path("/home/a/Docs"), "No space left on device", errno.ENOSPC)
    notices.folder_fallback(full)
    notices.unsaved(2.0)
    assert banner.problems() == [Problem.TRANSCRIPT_FOLDER, Problem.TRANSCRIPT_UNSAVED]
    assert "Free some space on its disk" in banner.text()
    notices.session_starting()
    assert banner.problems() == []
    notices.unsaved(2.0)
    assert banner.problems() == [Problem.TRANSCRIPT_UNSAVED]
