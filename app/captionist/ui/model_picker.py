"""The main window's model row: the installed models, "Import GGUF…" and "Models…".

Usage::

    picker = ModelPicker(store)
    picker.chosen.connect(on_model)          # Path: the model the user (or a refresh) selected
    picker.missing.connect(on_gone)          # Path: the configured model is gone; another is selected
    picker.refresh(configured)               # lists store.list(), keeps ``configured`` selected
    picker.import_model(path)                # True, or False after ``failed`` said why

The picker only lists and selects; loading the chosen model, and what the window offers for it
(latencies, languages), stay with ``MainWindow``. A model file named in the settings that is not
in the store (imported by path in an earlier version, or from the command line) is listed too.
GUI thread only.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QPushButton, QWidget

from captionist.models import ModelStore
from captionist.pipeline.signals import emit
from captionist.ui.buddy_label import buddy_label
from captionist.ui.gguf_file_dialog import ask_gguf_file
from captionist.ui.models_dialog import ModelsDialog


class ModelPicker(QWidget):
    chosen = Signal(object)  # Path of the selected model
    empty = Signal()  # a refresh found no model at all
    missing = Signal(object)  # Path: the model to keep selected is not there; another is (before ``chosen``)
    imported = Signal(object)  # Path of a model just imported (then selected)
    failed = Signal(str)  # why an import did not work
    models_changed = Signal()  # the model manager installed or deleted a model

    def __init__(self, store: ModelStore, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.store = store
        self.combo = QComboBox()
        self.combo.setMinimumWidth(260)
        import_button = QPushButton("Import GGUF…")
        models_button = QPushButton("Models…")
        self.models_dialog: ModelsDialog | None = None
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(buddy_label("Model", self.combo))
        row.addWidget(self.combo, 1)
        row.addWidget(import_button)
        row.addWidget(models_button)
        import_button.clicked.connect(self.ask_import)
        models_button.clicked.connect(self.open_models)
        self.combo.currentIndexChanged.connect(self._on_index)

    def selected(self) -> Path | None:
        data = self.combo.currentData()
        return Path(data) if data else None

    def refresh(self, configured: Path | None) -> None:
        """List the store's models (and ``configured`` if it is a file outside it), select
        ``configured`` where listed, else the first (``missing`` says so when there was a
        ``configured``); then ``chosen`` or ``empty``."""
        self.combo.blockSignals(True)
        self.combo.clear()
        entries = self.store.list()
        for e in entries:
            self.combo.addItem(e.label(), str(e.path))
        if configured is not None and configured.is_file() and configured not in [e.path for e in entries]:
            self.combo.addItem(configured.name, str(configured))
        index = self.combo.findData(str(configured)) if configured else -1
        self.combo.setCurrentIndex(index if index >= 0 else 0)
        self.combo.blockSignals(False)
        if self.combo.count() == 0:
            emit(self.empty)
            return
        if configured is not None and index < 0:  # deleted, renamed, or on a drive not plugged in
            emit(self.missing, configured)
        self._on_index()

    def import_model(self, path: Path) -> bool:
        """Copy ``path`` into the store and select it (``imported``); False after ``failed``."""
        try:
            entry = self.store.import_gguf(path)
        except (ValueError, OSError) as exc:
            emit(self.failed, str(exc))
            return False
        emit(self.imported, entry.path)
        self.refresh(entry.path)
        return True

    def ask_import(self) -> None:
        path = ask_gguf_file(self)
        if path is not None:
            self.import_model(path)

    def open_models(self) -> ModelsDialog:
        """Show the model manager (created once; its changes are passed on as ``models_changed``)."""
        if self.models_dialog is None:
            self.models_dialog = ModelsDialog(self.store, parent=self.window())
            self.models_dialog.models_changed.connect(self.models_changed)
        self.models_dialog.show()
        self.models_dialog.raise_()
        return self.models_dialog

    def _on_index(self, *_: object) -> None:
        model = self.selected()
        if model is not None:
            emit(self.chosen, model)
