"""The file dialog that picks a GGUF model to import (the model row and the model manager share it)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QFileDialog, QWidget


def ask_gguf_file(parent: QWidget) -> Path | None:
    """The GGUF file the user picked, or None if they cancelled."""
    name, _ = QFileDialog.getOpenFileName(parent, "Import a GGUF model", str(Path.home()), "GGUF (*.gguf)")
    return Path(name) if name else None
