"""The language picker: shown only for a model that offers a language choice.

Usage::

    picker = LanguagePicker()
    picker.set_choices(info.language_choices, settings.language_for(info))  # hidden when empty
    picker.language_changed.connect(controller.set_language)                 # the chosen code
    picker.language()                                                         # "de-DE", "auto" or None

One entry per language, with readable names ("German (de-DE)") and "Auto" first where the model
can pick the language itself (see ``captionist.models.languages``). GUI thread only.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QWidget

from captionist.models.languages import LanguageChoice, find_choice
from captionist.pipeline.signals import emit
from captionist.ui.buddy_label import buddy_label


class LanguagePicker(QWidget):
    language_changed = Signal(object)  # str: the chosen language's code

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.combo = QComboBox()
        self.combo.setToolTip("The language spoken. Auto lets the model recognise it.")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(buddy_label("Language", self.combo))
        layout.addWidget(self.combo)
        self.combo.currentIndexChanged.connect(self._on_chosen)
        self.set_choices([], None)

    def set_choices(self, choices: Sequence[LanguageChoice], current: str | None) -> None:
        """Offer ``choices`` with the one ``current`` (any alias) names selected, else the first;
        hide the picker when there is nothing to choose. Does not emit ``language_changed``."""
        self.combo.blockSignals(True)
        self.combo.clear()
        for choice in choices:
            self.combo.addItem(choice.label, choice.code)
        selected = find_choice(choices, current)
        index = self.combo.findData(selected.code) if selected else -1
        self.combo.setCurrentIndex(index if index >= 0 else 0)
        self.combo.blockSignals(False)
        self.setVisible(bool(choices))

    def language(self) -> str | None:
        """The chosen language's code; None when the model offers no choice."""
        return self.combo.currentData() if self.combo.count() else None

    def labels(self) -> list[str]:
        return [self.combo.itemText(i) for i in range(self.combo.count())]

    def _on_chosen(self, _index: int) -> None:
        if self.combo.count():
            emit(self.language_changed, self.language())
