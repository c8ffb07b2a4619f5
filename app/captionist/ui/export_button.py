"""The main window's "Export last session…" button: the last transcript written again, in any format.

Usage::

    button = ExportButton(show_error=window.show_error, show_status=window.show_notice)
    button.set_transcript(path)      # a session ended (or one was recovered): enabled from now on
    button.export(dest)              # True; False after show_error said why (bad format, full disk)

The format is the one ``dest``'s suffix names; the file dialog adds the suffix of the filter the
user picked when the name has none (``export_path``). The writing waits at most ``disk_thread.HANG_S`` for a
disk that does not answer (a network share that is down), then says so. GUI thread only.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtWidgets import QFileDialog, QPushButton, QWidget

from captionist.pipeline.disk_thread import bounded
from captionist.transcript import SessionWriter
from captionist.ui.export_path import export_destination, export_filters


class ExportButton(QPushButton):
    def __init__(
        self,
        show_error: Callable[[str], None],
        show_status: Callable[[str], None],
        parent: QWidget | None = None,
    ) -> None:
        super().__init__("Export last session…", parent)
        self._show_error, self._show_status = show_error, show_status
        self.transcript: Path | None = None
        self.setEnabled(False)
        self.clicked.connect(self.ask)

    def set_transcript(self, path: Path) -> None:
        self.transcript = path
        self.setEnabled(True)

    def export(self, dest: Path) -> bool:
        """Write the last session's transcript again, in the format ``dest``'s suffix names."""
        if self.transcript is None:
            return False
        try:
            source, fmt = self.transcript, dest.suffix.lstrip(".").lower()
            bounded(lambda: SessionWriter.export(source, dest, fmt), dest)  # a dead share
        except (ValueError, OSError) as exc:
            self._show_error(str(exc))
            return False
        self._show_status(f"Exported to {dest}")
        return True

    def ask(self) -> None:
        if self.transcript is None:
            return
        name, chosen = QFileDialog.getSaveFileName(
            self, "Export transcript", str(self.transcript.with_suffix("")), export_filters()
        )
        if name:
            self.export(export_destination(name, chosen))
