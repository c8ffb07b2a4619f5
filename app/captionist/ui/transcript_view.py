"""The live transcript: all committed text with scrollback, search and copy.

Usage::

    view = TranscriptView()
    view.append_update(update)   # CaptionUpdate; keeps following the end unless the user scrolled up
    view.find("budget")          # selects the next match (wraps); False and "No match" if none
    view.begin_session("USB Mic") # "— 2024-05-01 10:00 · USB Mic —": each session starts with one
    view.copy_all()
    view.set_keywords(KeywordList.parse(["alice"]), "#ff9f43")  # keyword alerts, highlighted

Keys, in the view's window: Ctrl+F (the platform's Find) goes to the search field, F3 (Find next)
finds the next match, Ctrl++ and Ctrl+- make the text larger and smaller (``zoom``: Ctrl+wheel too),
Ctrl+0 resets it. The text is read-only, but the arrow keys move a caret through it and
Shift+arrows select, so a keyboard or screen reader user can read and copy any part of it.
"""

from __future__ import annotations

from datetime import datetime

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication, QKeySequence, QShortcut, QTextCursor, QTextDocument
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from captionist.alerts.keywords import KeywordList
from captionist.pipeline.events import CaptionUpdate
from captionist.ui.keyword_highlighter import KeywordHighlighter
from captionist.ui.text_zoom import TextZoom


class TranscriptView(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.text = QPlainTextEdit()
        self.text.setReadOnly(True)
        self.text.setTextInteractionFlags(
            Qt.TextInteractionFlag.TextSelectableByMouse | Qt.TextInteractionFlag.TextSelectableByKeyboard
        )
        self.text.setMaximumBlockCount(100_000)
        self.text.setAccessibleName("Transcript")
        self._align_each_line_to_its_start()
        self.highlighter = KeywordHighlighter(self.text.document())
        self.search = QLineEdit()
        self.search.setPlaceholderText("Search the transcript")
        self.search.setAccessibleName("Search the transcript")  # a placeholder is not a name
        self.search.setClearButtonEnabled(True)
        find = QPushButton("Find")
        copy = QPushButton("Copy all")
        self.find_status = QLabel()  # "No match" after a search that found nothing
        self.find_status.setObjectName("hint")
        bar = QHBoxLayout()
        bar.addWidget(self.search, 1)
        bar.addWidget(self.find_status)
        bar.addWidget(find)
        bar.addWidget(copy)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.text, 1)
        layout.addLayout(bar)
        self.search.returnPressed.connect(self.find_next)
        find.clicked.connect(self.find_next)
        copy.clicked.connect(self.copy_all)
        self.search.textChanged.connect(lambda _: self.find_status.clear())
        QShortcut(QKeySequence.StandardKey.Find, self, self.focus_search)
        QShortcut(QKeySequence.StandardKey.FindNext, self, self.find_next)
        self.zoom = TextZoom(self.text, keys_in=self)  # Ctrl++ / Ctrl+- / Ctrl+0, Ctrl+wheel

    def find_next(self) -> bool:
        """The next match of what the search field holds (Enter, Find, F3)."""
        return self.find(self.search.text())

    def focus_search(self) -> None:
        self.search.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.search.selectAll()

    def _align_each_line_to_its_start(self) -> None:
        """Arabic and Hebrew lines start at the right edge, the others at the left.

        ``QPlainTextEdit`` takes one alignment for the whole document and ignores each line's
        direction for it, so a right-to-left line hung off the left edge. Justified is the one
        alignment Qt resolves per line: the last row of a line goes to the line's start (right for
        a right-to-left line), and a line that wraps fills its earlier rows."""
        document = self.text.document()
        option = document.defaultTextOption()
        option.setAlignment(Qt.AlignmentFlag.AlignJustify)
        document.setDefaultTextOption(option)

    def set_keywords(self, keywords: KeywordList, color: str) -> None:
        self.highlighter.set_keywords(keywords, color)

    def highlighted_words(self) -> list[str]:
        """The words drawn as keywords, in order."""
        out = []
        block = self.text.document().begin()
        while block.isValid():
            text = block.text()
            for fmt in block.layout().formats():
                out.append(text[fmt.start : fmt.start + fmt.length])
            block = block.next()
        return out

    def plain_text(self) -> str:
        return self.text.toPlainText()

    def _at_bottom(self) -> bool:
        bar = self.text.verticalScrollBar()
        return bar.value() >= bar.maximum() - 2

    def _append(self, text: str) -> None:
        follow = self._at_bottom()
        cursor = QTextCursor(self.text.document())
        cursor.movePosition(QTextCursor.MoveOperation.End)
        cursor.insertText(text)
        if follow:
            bar = self.text.verticalScrollBar()
            bar.setValue(bar.maximum())

    def _at_line_start(self) -> bool:
        """Whether the next text starts a line: the view is empty or ends with a line break. Read
        from the last line only, so an update costs the same at the third hour as in the first
        minute (the whole text, ``plain_text``, grows with the session)."""
        return self.text.document().lastBlock().text() == ""

    def append_update(self, update: CaptionUpdate) -> None:
        """Append the update's text; each end of utterance starts a new line."""
        for i, part in enumerate(update.new_lines()):
            at_line_start = self._at_line_start()
            if i and not at_line_start:
                self._append("\n")
                at_line_start = True
            text = part.lstrip() if at_line_start else part
            if text:
                self._append(text)
        if update.final and not self._at_line_start():
            self._append("\n")

    def begin_session(self, title: str, started: datetime | None = None) -> None:
        """Start a new session's text under a line with its date, time (``started``, default now)
        and sources ``title``."""
        when = (started or datetime.now()).strftime("%Y-%m-%d %H:%M")
        if not self.text.document().isEmpty():
            if not self._at_line_start():
                self._append("\n")
            self._append("\n")  # a blank line between sessions
        self._append(f"— {when} · {title} —\n")

    def find(self, needle: str) -> bool:
        """Select the next occurrence of ``needle`` (case-insensitive), wrapping to the top; when
        there is none, say "No match" beside the search field and keep the selection."""
        if not needle:
            self.find_status.clear()
            return False
        found = self.text.find(needle)
        if not found:
            cursor = self.text.textCursor()
            self.text.moveCursor(QTextCursor.MoveOperation.Start)
            found = self.text.find(needle, QTextDocument.FindFlag(0))
            if not found:
                self.text.setTextCursor(cursor)
        self.find_status.setText("" if found else "No match")
        return found

    def copy_all(self) -> None:
        QGuiApplication.clipboard().setText(self.plain_text())
