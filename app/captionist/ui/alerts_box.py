"""Preferences' "Keyword alerts" group: the words or names to watch for, how to be told, and the
highlight colour.

Usage::

    box = AlertsBox(settings.alerts, alerts)   # AlertSettings (edited in place), KeywordAlerts
    box.set_keywords_text("Alice, budget review")
    box.settings_changed.connect(save_later)

Keywords are separated by commas (a keyword may have several words: "budget review"); blank and
repeated ones are dropped. Changes apply at once. GUI thread only.
"""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QCheckBox, QColorDialog, QFormLayout, QGroupBox, QLineEdit, QPushButton, QWidget

from captionist.alerts.keyword_alerts import KeywordAlerts
from captionist.pipeline.signals import emit
from captionist.settings import AlertSettings


def split_keywords(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


class AlertsBox(QGroupBox):
    settings_changed = Signal()

    def __init__(self, settings: AlertSettings, alerts: KeywordAlerts, parent: QWidget | None = None) -> None:
        super().__init__("Keyword alerts", parent)
        self.settings, self.alerts = settings, alerts
        self.keywords = QLineEdit(", ".join(settings.keywords))
        self.keywords.setPlaceholderText("Your name, a project, a topic… (separated by commas)")
        self.notify = QCheckBox("Show a notification when one is said")
        self.notify.setChecked(settings.notify)
        self.sound = QCheckBox("With a sound")
        self.sound.setChecked(settings.sound)
        self.colour = QPushButton("Highlight colour")
        self._show_colour()
        form = QFormLayout(self)
        form.addRow("Keywords", self.keywords)
        form.addRow(self.notify)
        form.addRow(self.sound)
        form.addRow(self.colour)
        self.keywords.editingFinished.connect(lambda: self.set_keywords_text(self.keywords.text()))
        self.notify.toggled.connect(self._apply)
        self.sound.toggled.connect(self._apply)
        self.colour.clicked.connect(self._pick_colour)

    def set_keywords_text(self, text: str) -> None:
        words = split_keywords(text)
        self.settings.keywords = words
        self.alerts.set_keywords(words)
        self.keywords.setText(", ".join(k.text for k in self.alerts.keywords.keywords))
        emit(self.settings_changed)

    def set_colour(self, colour: str) -> None:
        if not QColor(colour).isValid():
            raise ValueError(f"not a colour: {colour!r}")
        self.settings.color = QColor(colour).name()
        self._show_colour()
        emit(self.settings_changed)

    def _apply(self, *_: object) -> None:
        self.settings.notify, self.settings.sound = self.notify.isChecked(), self.sound.isChecked()
        emit(self.settings_changed)

    def _pick_colour(self) -> None:
        chosen = QColorDialog.getColor(QColor(self.settings.color), self)
        if chosen.isValid():
            self.set_colour(chosen.name())

    def _show_colour(self) -> None:
        text = "#000000" if QColor(self.settings.color).lightness() > 128 else "#ffffff"
        self.colour.setStyleSheet(f"background: {self.settings.color}; color: {text};")
