"""A label that names a field, for the eye and for a screen reader.

Usage::

    row.addWidget(buddy_label("Model", self.combo))

The label is the field's buddy, so a screen reader calls the field by it (on Linux a combo box has no
other name than its current value) and a mnemonic in the text would move the focus to the field.
"""

from __future__ import annotations

from PySide6.QtWidgets import QLabel, QWidget


def buddy_label(text: str, field: QWidget) -> QLabel:
    label = QLabel(text)
    label.setBuddy(field)
    return label
