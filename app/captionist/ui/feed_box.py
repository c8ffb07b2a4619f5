"""Preferences' "Caption feed" group: serve the captions to OBS and browsers, the address to paste,
the network choice with its token, and the text file for OBS text sources.

Usage::

    box = FeedBox(settings.feed, feed)     # FeedSettings (edited in place), CaptionFeed
    box.settings_changed.connect(save_later)
    box.url.text()                         # what to paste into an OBS browser source

Every change applies at once (``CaptionFeed.apply``) and the box shows the result: the URL, or why
the feed does not work (a port in use, a folder that cannot be written). Off by default; serving to
the network is a separate, explicit choice, and its URL carries the access token. GUI thread only.
"""

from __future__ import annotations

from PySide6.QtCore import QUrl, Signal
from PySide6.QtGui import QDesktopServices, QGuiApplication
from PySide6.QtWidgets import (
    QCheckBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QWidget,
)

from captionist.feed.access import DEFAULT_PORT
from captionist.feed.caption_feed import CaptionFeed
from captionist.pipeline.signals import emit
from captionist.settings import FeedSettings


class FeedBox(QGroupBox):
    settings_changed = Signal()

    def __init__(self, settings: FeedSettings, feed: CaptionFeed, parent: QWidget | None = None) -> None:
        super().__init__("Caption feed (OBS, browsers)", parent)
        self.settings, self.feed = settings, feed
        self.enabled = QCheckBox("Serve the captions as a web page and event stream")
        self.enabled.setChecked(settings.enabled)
        self.port = QSpinBox()
        self.port.setRange(1, 65535)
        self.port.setValue(settings.port or DEFAULT_PORT)
        self.port.setMaximumWidth(120)
        self.lan = QCheckBox("Also to other devices on the network (needs the access token in the URL)")
        self.lan.setChecked(settings.lan)
        self.url = QLineEdit()
        self.url.setReadOnly(True)
        self.copy = QPushButton("Copy")
        self.copy.setAccessibleName("Copy the address")
        self.open = QPushButton("Open")
        self.open.setAccessibleName("Open the address in a browser")
        self.new_token = QPushButton("New token")
        self.new_token.setToolTip("Links with the old token stop working")
        self.text_file = QCheckBox("Keep a text file of the current lines (OBS “Text (read from file)”)")
        self.text_file.setChecked(settings.text_file)
        self.text_path = QLineEdit(str(feed.text_file_path))
        self.text_path.setReadOnly(True)
        choose = QPushButton("Choose…")
        choose.setAccessibleName("Choose the caption text file")
        self.status = QLabel()
        self.status.setWordWrap(True)
        self.status.setObjectName("hint")

        form = QFormLayout(self)
        form.addRow(self.enabled)
        form.addRow("Port", self.port)
        form.addRow(self.lan)
        url_row = QHBoxLayout()
        for w in (self.url, self.copy, self.open, self.new_token):
            url_row.addWidget(w, 1 if w is self.url else 0)
        form.addRow("Address", url_row)
        form.labelForField(url_row).setBuddy(self.url)
        form.addRow(self.text_file)
        file_row = QHBoxLayout()
        file_row.addWidget(self.text_path, 1)
        file_row.addWidget(choose)
        form.addRow("File", file_row)
        form.labelForField(file_row).setBuddy(self.text_path)
        form.addRow(self.status)

        self.enabled.toggled.connect(self._apply)
        self.lan.toggled.connect(self._apply)
        self.port.editingFinished.connect(self._apply)
        self.text_file.toggled.connect(self._apply)
        self.copy.clicked.connect(lambda: QGuiApplication.clipboard().setText(self.url.text()))
        self.open.clicked.connect(lambda: QDesktopServices.openUrl(QUrl(self.url.text())))
        self.new_token.clicked.connect(self._new_token)
        choose.clicked.connect(self._choose_file)
        feed.changed.connect(self.refresh)
        self.refresh()

    def _apply(self, *_: object) -> None:
        s = self.settings
        s.enabled, s.lan, s.port = self.enabled.isChecked(), self.lan.isChecked(), self.port.value()
        s.text_file = self.text_file.isChecked()
        self.feed.apply()
        emit(self.settings_changed)

    def _new_token(self) -> None:
        self.feed.new_token()
        emit(self.settings_changed)

    def set_text_file_path(self, path: str) -> None:
        self.settings.text_file_path = path
        self.text_path.setText(str(self.feed.text_file_path))
        self.feed.apply_text_file()
        emit(self.settings_changed)

    def _choose_file(self) -> None:
        name, _ = QFileDialog.getSaveFileName(
            self, "Captions text file", str(self.feed.text_file_path), "Text (*.txt)"
        )
        if name:
            self.set_text_file_path(name)

    def refresh(self) -> None:
        """Show what the feed does now."""
        serving = bool(self.feed.url)
        self.url.setText(self.feed.url if serving else "")
        self.url.setPlaceholderText("off" if not self.settings.enabled else "not serving")
        for w in (self.copy, self.open):
            w.setEnabled(serving)
        self.new_token.setEnabled(self.settings.enabled and self.settings.lan)
        self.lan.setEnabled(self.settings.enabled)
        self.status.setText(self.feed.error or "")
