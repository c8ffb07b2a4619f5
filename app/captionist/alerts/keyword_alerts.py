"""Keyword alerts wired to a session controller: ``hit`` for every keyword spoken.

Usage::

    alerts = KeywordAlerts(["Alice", "budget"])
    alerts.attach(controller)          # follows its sessions and captions
    alerts.hit.connect(on_hit)         # KeywordHit, in the order spoken
    alerts.set_keywords(["Bob"])       # applies from the next word on
    alerts.keywords                    # the KeywordList the overlay and transcript highlight

GUI thread only (the controller's signals arrive there).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from PySide6.QtCore import QObject, Signal, Slot

from captionist.alerts.keywords import KeywordList
from captionist.alerts.watcher import AlertWatcher
from captionist.pipeline.events import CaptionUpdate
from captionist.pipeline.signals import emit


class KeywordAlerts(QObject):
    hit = Signal(object)  # KeywordHit
    keywords_changed = Signal(object)  # KeywordList

    def __init__(self, keywords: Iterable[str] = ()) -> None:
        super().__init__()
        self.keywords = KeywordList.parse(keywords)
        self._watcher = AlertWatcher(self.keywords)

    def attach(self, controller: Any) -> None:
        controller.session_started.connect(self.on_session_started)
        controller.caption.connect(self.on_caption)

    def set_keywords(self, keywords: Iterable[str]) -> None:
        parsed = KeywordList.parse(keywords)
        if parsed != self.keywords:
            self.keywords = parsed
            self._watcher.set_keywords(parsed)
            emit(self.keywords_changed, parsed)

    @Slot(object)
    def on_session_started(self, _config: object = None) -> None:
        self._watcher.begin_session()

    @Slot(object)
    def on_caption(self, update: CaptionUpdate) -> None:
        for hit in self._watcher.feed(update):
            emit(self.hit, hit)
