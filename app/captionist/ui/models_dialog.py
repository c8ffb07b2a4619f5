"""The model manager window: installed models (delete), the catalogue download, local import.

Usage::

    dialog = ModelsDialog(store, installer=install_model, hardware=probe_hardware())
    dialog.models_changed.connect(main_window.refresh_models)
    dialog.show()

The catalogue lists every downloadable model with its family and what it is good for (speed,
languages, punctuation, end of utterance); the one ``recommend`` picks for this computer is
marked and selected. The download/convert/quantize job runs on its own QThread
(``InstallWorker``); the dialog shows each stage's progress, and Cancel sets the job's cancel
event. Without network the message says so and points at "Import GGUF…". Each quantization is
listed with its file size and the RAM it needs; one that needs more than this machine has is marked.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, Qt, QThread, Signal, Slot
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from captionist.models import CATALOGUE, CatalogueEntry, ModelStore
from captionist.models.install import install_model
from captionist.models.recommend import Hardware, probe_hardware, recommend
from captionist.models.size_table import format_gb, size_text
from captionist.pipeline.signals import emit
from captionist.ui.announce import Urgency, announce
from captionist.ui.buddy_label import buddy_label
from captionist.ui.gguf_file_dialog import ask_gguf_file

STAGE_TEXT = {
    "download": "Downloading",
    "convert": "Converting to GGUF",
    "quantize": "Quantizing",
    "done": "Done",
}


class InstallWorker(QObject):
    progress = Signal(str, int, int)
    finished = Signal(object)  # Path on success, None on failure or cancel
    failed = Signal(str)

    def __init__(self, installer: Callable[..., Path], entry: CatalogueEntry, quant: str, models_dir: Path):
        super().__init__()
        self.installer, self.entry, self.quant, self.models_dir = installer, entry, quant, models_dir
        self.cancel = threading.Event()

    @Slot()
    def run(self) -> None:
        result = None
        try:
            result = self.installer(
                self.entry,
                self.quant,
                cancel=self.cancel,
                models_dir=self.models_dir,
                on_progress=lambda stage, d, t: emit(self.progress, stage, d, t),
            )
        except Exception as exc:  # every failure is shown in the dialog; the thread always ends
            emit(self.failed, " ".join(str(exc).split()) or type(exc).__name__)
        emit(self.finished, result)


def _labelled(text: str, field: QWidget) -> QHBoxLayout:
    """``field`` after a label that names it (for a screen reader too)."""
    row = QHBoxLayout()
    row.addWidget(buddy_label(text, field))
    row.addWidget(field, 1)
    return row


class ModelsDialog(QDialog):
    models_changed = Signal()

    def __init__(
        self,
        store: ModelStore,
        installer: Callable[..., Path] = install_model,
        entries: tuple[CatalogueEntry, ...] = CATALOGUE,
        hardware: Hardware | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Speech models")
        self.store, self.installer, self.entries = store, installer, entries
        self.hardware = hardware or probe_hardware()
        hw = self.hardware
        self.recommendation = recommend(hw.physical_cores, hw.ram_gb, hw.has_gpu)
        self.installed = QListWidget()
        self.delete_button = QPushButton("Delete")
        self.delete_button.setEnabled(False)
        import_button = QPushButton("Import GGUF…")
        self.recommended = QLabel(
            f"Recommended for this computer: {self.recommendation.entry.title} "
            f"({self.recommendation.quantization}), because {self.recommendation.reason}."
        )
        self.recommended.setWordWrap(True)
        self.catalogue = QComboBox()
        for e in entries:
            mark = " (recommended)" if e is self.recommendation.entry else ""
            self.catalogue.addItem(f"{e.title} · {e.family}{mark}", e.key)
        self.about = QLabel()
        self.about.setWordWrap(True)
        self.quant = QComboBox()
        self.download = QPushButton("Download and install")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.progress = QProgressBar()
        self.progress.setAccessibleName("Download progress")
        self.progress.hide()  # shown while a download runs
        self._failure: str | None = None  # why the running download failed
        self._stage = ""  # the running download's stage, as last shown
        self.status = QLabel()
        self.status.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.addWidget(buddy_label("Installed models", self.installed))
        layout.addWidget(self.installed)
        row = QHBoxLayout()
        row.addWidget(import_button)
        row.addWidget(self.delete_button)
        layout.addLayout(row)
        layout.addWidget(QLabel("Download"))
        layout.addWidget(self.recommended)
        layout.addLayout(_labelled("Model", self.catalogue))
        layout.addWidget(self.about)
        layout.addLayout(_labelled("Size", self.quant))
        row2 = QHBoxLayout()
        row2.addWidget(self.download)
        row2.addWidget(self.cancel_button)
        layout.addLayout(row2)
        layout.addWidget(self.progress)
        layout.addWidget(self.status)
        self.delete_button.clicked.connect(self.delete_selected)
        self.installed.currentItemChanged.connect(self._on_installed_chosen)
        import_button.clicked.connect(self._ask_import)
        self.download.clicked.connect(self.start_install)
        self.cancel_button.clicked.connect(self.cancel_install)
        self.catalogue.currentIndexChanged.connect(self._on_entry_chosen)
        self._thread: QThread | None = None
        self._worker: InstallWorker | None = None
        self.refresh()
        index = self.catalogue.findData(self.recommendation.entry.key)
        self.catalogue.setCurrentIndex(max(0, index))
        self._on_entry_chosen()

    @property
    def entry(self) -> CatalogueEntry:
        """The catalogue entry chosen for download."""
        return self.entries[max(0, self.catalogue.currentIndex())]

    def choose(self, key: str) -> None:
        """Select the catalogue entry ``key`` for download."""
        self.catalogue.setCurrentIndex(self.catalogue.findData(key))

    def _on_entry_chosen(self, *_: object) -> None:
        e = self.entry
        self.about.setText(
            f"Good for {e.good_for}. {e.features[:1].upper()}{e.features[1:]}. Speed: {e.speed}. "
            f"From huggingface.co/{e.repo_id} (~{format_gb(e.download_gb)} download, {e.license})."
        )
        ram = self.hardware.ram_gb
        self.quant.clear()
        for q in e.quantizations:
            warn = " - more than this computer has" if ram is not None and q.ram_gb > ram else ""
            self.quant.addItem(
                f"{q.type_name}: {size_text(q)} ({q.note}){warn}",
                q.type_name,
            )
        r = self.recommendation
        default = r.quantization if e is r.entry else e.default_quantization
        self.quant.setCurrentIndex(max(0, self.quant.findData(default)))
        if self._thread is None:
            self.status.setText("")

    def refresh(self) -> None:
        self.installed.clear()
        for e in self.store.list():
            built_in = e.origin != "local"
            item = QListWidgetItem(e.label() + (" - built in" if e.origin == "bundled" else ""))
            item.setData(Qt.ItemDataRole.UserRole, e)
            if built_in:
                item.setToolTip(f"{e.path} is not in the models folder, so it cannot be deleted here")
            self.installed.addItem(item)
        self._on_installed_chosen()

    def _on_installed_chosen(self, *_: object) -> None:
        """Delete is offered only for a model in the models folder (never the built-in one)."""
        item = self.installed.currentItem()
        entry = item.data(Qt.ItemDataRole.UserRole) if item is not None else None
        self.delete_button.setEnabled(entry is not None and entry.origin == "local")

    def delete_selected(self) -> None:
        item = self.installed.currentItem()
        if item is None:
            return
        try:
            self.store.delete(item.data(Qt.ItemDataRole.UserRole))
        except (ValueError, OSError) as exc:
            self._tell(str(exc), Urgency.INTERRUPT)
            return
        self.refresh()
        emit(self.models_changed)

    def import_file(self, path: Path) -> bool:
        try:
            self.store.import_gguf(path)
        except (ValueError, OSError) as exc:
            self._tell(str(exc), Urgency.INTERRUPT)
            return False
        self.refresh()
        emit(self.models_changed)
        return True

    def _ask_import(self) -> None:
        path = ask_gguf_file(self)
        if path is not None:
            self.import_file(path)

    def start_install(self) -> None:
        if self._thread is not None:
            return
        self.catalogue.setEnabled(False)
        self._worker = InstallWorker(self.installer, self.entry, self.quant.currentData(), self.store.root)
        self._thread = QThread()
        self._worker.moveToThread(self._thread)
        self._thread.started.connect(self._worker.run)
        self._worker.progress.connect(self._on_progress)
        self._worker.failed.connect(self._on_failed)
        self._worker.finished.connect(self._on_finished)
        self._worker.finished.connect(self._thread.quit, Qt.ConnectionType.DirectConnection)
        self.download.setEnabled(False)
        self.cancel_button.setEnabled(True)
        self._failure = None
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self.progress.show()
        self._stage = ""
        self._tell("Connecting to huggingface.co…", Urgency.POLITE)
        self._thread.start()

    def cancel_install(self) -> None:
        if self._worker is not None:
            self._worker.cancel.set()
            self.status.setText("Cancelling…")

    @Slot(str, int, int)
    def _on_progress(self, stage: str, done: int, total: int) -> None:
        if total > 0 and stage == "convert" and done == 0:
            self.progress.setRange(0, 0)  # busy: the converter reports no finer progress
        else:
            scale = max(1, total // 1_000_000)
            self.progress.setRange(0, max(1, total // scale))
            self.progress.setValue(done // scale)
        extra = f" {done / 1e9:.2f} / {total / 1e9:.2f} GB" if stage == "download" else ""
        new_stage, self._stage = stage != self._stage, stage  # a screen reader hears each stage once
        self._tell(f"{STAGE_TEXT.get(stage, stage)}…{extra}", Urgency.POLITE if new_stage else None)

    @Slot(str)
    def _on_failed(self, message: str) -> None:
        self._failure = message
        self.status.setText(f"Download failed: {message}")  # told with the outcome, once it ends

    @Slot(object)
    def _on_finished(self, path: object) -> None:
        if self._thread is not None:
            self._thread.wait()
        cancelled = self._worker is not None and self._worker.cancel.is_set()
        self._thread, self._worker = None, None
        self.catalogue.setEnabled(True)
        self.download.setEnabled(True)
        self.cancel_button.setEnabled(False)
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self.progress.hide()  # a bar left at 0 % would say the download is still waiting
        if path:
            self._tell(f"Installed {Path(str(path)).name}", Urgency.POLITE)
            self.refresh()
            emit(self.models_changed)
        elif cancelled or self._failure is None:
            self._tell("Download cancelled.", Urgency.POLITE)
        else:
            self._tell(f"Download failed: {self._failure} Press Download to try again.", Urgency.INTERRUPT)

    def _tell(self, text: str, urgency: Urgency | None) -> None:
        """Show ``text`` under the download; a screen reader reads it too, unless ``urgency`` is None
        (a progress figure: the stage it belongs to was read when it began)."""
        self.status.setText(text)
        if urgency is not None:
            announce(self, text, urgency)
