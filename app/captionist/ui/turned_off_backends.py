"""Preferences' lines for the GPU backends turned off because they crashed Captionist, each with a
button that turns it back on (from the next start).

Usage::

    rows = TurnedOffBackends(guard)     # hidden when nothing is off
    cform.addRow(rows)
    rows.turn_on("vulkan")              # what the button does; False (and why) if the record stayed

The record is ``BackendGuard``'s (``captionist.backend_guard``). A backend turned back on is loaded
at the next start only: ggml's backend registry cannot take a driver in while models use it, and if
the driver crashes again the guard turns it off again. GUI thread only; nothing here raises.
"""

from __future__ import annotations

from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from captionist.backend_guard import BackendGuard, display_name


class TurnedOffBackends(QWidget):
    def __init__(self, guard: BackendGuard, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.guard = guard
        self.buttons: dict[str, QPushButton] = {}
        self.labels: dict[str, QLabel] = {}
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        crashes = guard.disabled()
        for backend, crash in sorted(crashes.items()):
            label = QLabel(crash.describe())
            label.setWordWrap(True)
            button = QPushButton(f"Turn {display_name(backend)} back on")
            button.setToolTip("From the next start of Captionist")
            button.clicked.connect(lambda _=False, b=backend: self.turn_on(b))
            row = QHBoxLayout()
            row.addWidget(label, 1)
            row.addWidget(button)
            layout.addLayout(row)
            self.labels[backend], self.buttons[backend] = label, button
        self.setVisible(bool(crashes))

    def turn_on(self, backend: str) -> bool:
        """Remove ``backend``'s crash record; the line says what happens next."""
        label, button = self.labels[backend], self.buttons[backend]
        try:
            self.guard.enable(backend)
        except OSError as exc:
            label.setText(f"{display_name(backend)} could not be turned back on: {exc}")
            return False
        label.setText(f"{display_name(backend)} is on again from the next start of Captionist.")
        button.setEnabled(False)
        return True
