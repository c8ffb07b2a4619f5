"""A dismissable message strip above the transcript: red for problems, blue for information.

Usage::

    banner = Banner(BannerKind.ERROR)
    banner.show_message("cannot open 'USB Mic'", Problem.SESSION)
    banner.resolve(Problem.SESSION)     # the condition ended: its lines go, the rest stay
    banner.text()                       # the lines shown, newest last ("" when hidden)

Each line is kept with the ``Problem`` it reports, so the window can take a line away when that
condition ends (the model loaded, the device is back, a source is ticked) while others stay. The
close button dismisses every line. Distinct lines stack, newest last, at most ``MAX_LINES``.
A screen reader reads each new line out (``announce``): at once for problems, after what it is
reading for information; lines added while the window is hidden are read when it appears.
GUI thread only.
"""

from __future__ import annotations

from enum import Enum

from PySide6.QtCore import Signal
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QToolButton, QWidget

from captionist.pipeline.signals import emit
from captionist.ui.announce import Urgency, announce

MAX_LINES = 3


class BannerKind(Enum):
    ERROR = "errorBanner"  # the value is the widget's object name (style sheet selector)
    INFO = "infoBanner"


class Problem(Enum):
    """What a banner line is about: the window resolves a problem when its condition ends."""

    GENERAL = "general"  # only the close button removes it
    SETTINGS = "settings"
    NO_MODEL = "no model"
    MODEL = "model"  # the selected model could not be loaded or is still loading
    MISSING_MODEL = "missing model"  # the model chosen before is gone, another was selected
    AUDIO = "audio"  # the sources could not be listed
    SOURCES = "sources"  # no source ticked
    MISSING_SOURCES = "missing sources"  # sources ticked last time are not connected
    SESSION = "session"  # a session could not start or failed
    SOUND_SERVER = "sound server"  # ... because the sound server does not answer (bounded_call)
    DEVICE = "device"  # a source disappeared during a session
    RECOVERY = "recovery"  # a session was recovered after a crash
    TRANSCRIPT_FOLDER = "transcript folder"  # the chosen folder failed; the default one is used
    TRANSCRIPT_UNSAVED = "transcript unsaved"  # the file is behind the captions: its disk is slow
    FEED = "caption feed"  # the feed cannot serve, or its captions file cannot be written
    BACKEND_CRASH = "backend crash"  # a GPU driver crashed the last run: that backend is off
    BACKEND_STUCK = "backend stuck"  # a GPU driver's start (or a model's first run on it) takes long


COLOURS = {BannerKind.ERROR: "#5c1f24", BannerKind.INFO: "#1f3d5c"}
URGENCY = {BannerKind.ERROR: Urgency.INTERRUPT, BannerKind.INFO: Urgency.POLITE}
DISMISS_NAMES = {BannerKind.ERROR: "Dismiss the problems", BannerKind.INFO: "Dismiss the notices"}


class Banner(QFrame):
    dismissed = Signal()  # the user closed it
    added = Signal(str)  # a line that was not showing is shown now (a repeat moving to the end is not)

    def __init__(self, kind: BannerKind, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.kind = kind
        self.setObjectName(kind.value)
        self.setStyleSheet(
            f"#{kind.value} {{ background: {COLOURS[kind]}; border-radius: 4px; }}"
            f"#{kind.value} QLabel, #{kind.value} QToolButton {{ color: #ffffff; }}"
        )
        self.label = QLabel()
        self.label.setWordWrap(True)
        self.close_button = QToolButton()
        self.close_button.setText("✕")
        self.close_button.setToolTip("Dismiss")
        self.close_button.setAccessibleName(DISMISS_NAMES[kind])  # not "✕"
        self.close_button.setAutoRaise(True)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(10, 6, 6, 6)
        layout.addWidget(self.label, 1)
        layout.addWidget(self.close_button)
        self._lines: list[tuple[str, Problem]] = []
        self._unread: list[str] = []  # lines a screen reader has not been given yet
        self.close_button.clicked.connect(self.dismiss)
        self.hide()

    def show_message(self, message: str, problem: Problem = Problem.GENERAL) -> None:
        """Show ``message`` as the newest line (a repeated message moves to the end)."""
        kept = [line for line in self._lines if line[0] != message]
        new = len(kept) == len(self._lines)
        self._lines = kept[-(MAX_LINES - 1) :] + [(message, problem)]
        self._unread = [line for line in self._unread if line != message] + [message]
        self._render()
        if new:
            emit(self.added, message)

    def show_only(self, message: str, problem: Problem) -> None:
        """``message`` as the one line of ``problem``, whose cause has changed: its other lines go.
        A line already showing stays where it is and is not announced again."""
        if (message, problem) in self._lines:
            self._lines = [line for line in self._lines if line[1] is not problem or line[0] == message]
            self._render()
            return
        self._lines = [line for line in self._lines if line[1] is not problem]
        self.show_message(message, problem)

    def resolve(self, *problems: Problem) -> None:
        """The conditions ``problems`` have ended: remove their lines (hide when none is left)."""
        self._lines = [line for line in self._lines if line[1] not in problems]
        self._render()

    def withdraw(self, message: str) -> None:
        """Remove the line ``message`` (one instance of a problem ended, others may remain)."""
        self._lines = [line for line in self._lines if line[0] != message]
        self._render()

    def problems(self) -> list[Problem]:
        return [problem for _, problem in self._lines]

    def clear(self) -> None:
        self._lines = []
        self._render()

    def dismiss(self) -> None:
        self.clear()
        emit(self.dismissed)

    def text(self) -> str:
        return "\n".join(message for message, _ in self._lines)

    def _render(self) -> None:
        self.label.setText(self.text())
        self.setVisible(bool(self._lines))
        self._read_out()

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 (Qt's name)
        super().showEvent(event)
        self._read_out()  # the window appeared with lines added while it was hidden

    def _read_out(self) -> None:
        shown = {message for message, _ in self._lines}
        unread = [line for line in self._unread if line in shown]
        if not self.isVisible() or not unread:
            self._unread = unread
            return
        self._unread = []
        announce(self, "\n".join(unread), URGENCY[self.kind])
