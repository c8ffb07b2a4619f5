"""What the window's info banner says about the transcript file while a session runs.

Usage::

    notices = TranscriptNotices(window.info_banner)
    controller.folder_fallback.connect(notices.folder_fallback)   # FolderFallback
    controller.transcript_unsaved.connect(notices.unsaved)        # seconds behind; 0.0: caught up
    notices.session_starting()                                    # a new session: old lines go

* The chosen folder could not be used: where the transcript goes instead, why, and what to do.
* The file is behind the captions (its disk is slow or not answering): said once, with the time of
  the first caption not yet in the file, and withdrawn when the file has caught up. It is not
  rewritten each second, so a user who closed the banner is not shown it again for the same delay.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from PySide6.QtCore import QObject, Slot

from captionist.pipeline.transcript_target import FolderFallback
from captionist.ui.banner import Banner, Problem


class TranscriptNotices(QObject):
    def __init__(self, banner: Banner) -> None:
        super().__init__(banner)
        self._banner = banner
        self._behind = False  # the banner has said the file is behind, and it has not caught up

    def session_starting(self) -> None:
        self._behind = False
        self._banner.resolve(Problem.TRANSCRIPT_FOLDER, Problem.TRANSCRIPT_UNSAVED)

    @Slot(object)
    def folder_fallback(self, fallback: FolderFallback) -> None:
        self._banner.show_message(
            f"The transcript folder {fallback.chosen} cannot be used ({fallback.why}), so this "
            f"session's transcript is saved in {fallback.used}. {fallback.advice()}",
            Problem.TRANSCRIPT_FOLDER,
        )

    @Slot(float)
    def unsaved(self, seconds: float) -> None:
        if seconds <= 0:
            self._behind = False
            self._banner.resolve(Problem.TRANSCRIPT_UNSAVED)
        elif not self._behind:
            self._behind = True
            since = (datetime.now() - timedelta(seconds=seconds)).strftime("%H:%M:%S")
            self._banner.show_message(
                f"Saving the transcript is slow: the captions since {since} are not in the file yet. "
                "Its disk is slow or not answering; the captions go on, and the file catches up "
                "when the disk answers.",
                Problem.TRANSCRIPT_UNSAVED,
            )
