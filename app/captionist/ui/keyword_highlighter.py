"""Keyword alerts in the live transcript: the keywords' words drawn bold on the alert colour.

Usage::

    highlighter = KeywordHighlighter(view.text.document())
    highlighter.set_keywords(KeywordList.parse(["alice"]), "#ff9f43")

Each line (a text block: one utterance) is matched on its own, so a keyword of several words is
found within a line. Qt re-highlights a line whenever its text changes, which also covers a word
that grows over several updates. GUI thread only.
"""

from __future__ import annotations

from PySide6.QtGui import QColor, QFont, QSyntaxHighlighter, QTextCharFormat, QTextDocument

from captionist.alerts.keywords import KeywordList
from captionist.transcript.unspaced import word_spans


class KeywordHighlighter(QSyntaxHighlighter):
    def __init__(self, document: QTextDocument) -> None:
        super().__init__(document)
        self.keywords = KeywordList()
        self.format = QTextCharFormat()

    def set_keywords(self, keywords: KeywordList, color: str) -> None:
        self.keywords = keywords
        self.format = QTextCharFormat()
        self.format.setBackground(QColor(color))
        self.format.setForeground(QColor("#000000"))
        self.format.setFontWeight(QFont.Weight.Bold)
        self.rehighlight()

    def highlightBlock(self, text: str) -> None:  # noqa: N802 - Qt override
        if not self.keywords:
            return
        spans = word_spans(text)
        for (start, end), marked in zip(
            spans, self.keywords.marks([text[a:b] for a, b in spans]), strict=True
        ):
            if marked:
                self.setFormat(start, end - start, self.format)
