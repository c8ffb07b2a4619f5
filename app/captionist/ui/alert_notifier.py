"""Says that a keyword was spoken: a tray notification (or, without a tray, the window's notice
line) and, if chosen, the system's alert sound.

Usage::

    notifier = AlertNotifier(settings.alerts, show_message=tray.show_message, fallback=window.show_notice)
    alerts.hit.connect(notifier.notify)      # KeywordHit
    notifier.shown                           # the notifications given, newest last (also for tests)

The same keyword is announced at most once per ``REPEAT_S`` seconds (it is still highlighted and
sent on the caption feed every time), so a name said over and over does not bury the screen in
notifications. ``AlertSettings.notify`` off: no notification; ``sound``: the system alert sound
(``QApplication.beep``) with each notification. GUI thread only.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from PySide6.QtWidgets import QApplication

from captionist.alerts.watcher import KeywordHit
from captionist.settings import AlertSettings
from captionist.transcript.timecode import format_clock

REPEAT_S = 30.0
ShowMessage = Callable[[str, str], bool]  # (title, body) -> shown by the tray


def describe(hit: KeywordHit) -> tuple[str, str]:
    """The notification's title and body."""
    return f"“{hit.keyword}” was said", f"“{hit.text}” at {format_clock(hit.time_ms)} into the session"


class AlertNotifier:
    def __init__(
        self,
        settings: AlertSettings,
        show_message: ShowMessage | None = None,
        fallback: Callable[[str], None] | None = None,
        beep: Callable[[], None] = QApplication.beep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self._show_message, self._fallback, self._beep, self._clock = show_message, fallback, beep, clock
        self._last: dict[str, float] = {}
        self.shown: list[tuple[str, str]] = []

    def notify(self, hit: KeywordHit) -> bool:
        """Announce ``hit`` unless announcements are off or it was announced just now; True if it was."""
        if not self.settings.notify:
            return False
        now = self._clock()
        key = hit.keyword.casefold()
        if key in self._last and now - self._last[key] < REPEAT_S:
            return False
        self._last[key] = now
        title, body = describe(hit)
        if self._show_message is None or not self._show_message(title, body):
            if self._fallback is not None:
                self._fallback(f"{title}: {body}")
        self.shown.append((title, body))
        if self.settings.sound:
            self._beep()
        return True
