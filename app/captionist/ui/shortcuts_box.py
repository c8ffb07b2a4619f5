"""Preferences' "Shortcuts" group: global shortcuts on/off, one recorded key sequence per action, and why
they work or not.

Usage::

    box = ShortcutsBox(settings.shortcuts, shortcuts)    # ShortcutSettings (edited in place), GlobalShortcuts
    box.settings_changed.connect(save_later)
    box.set_key(ShortcutAction.CLICK_THROUGH, "Ctrl+Alt+K")   # what recording does; False if refused

Every change applies at once: the setting is stored and the listener restarts with the new keys
(``GlobalShortcuts.apply``). A recorded sequence that cannot be a global shortcut, or that clashes
with another action's, is not stored: the edit goes back to the stored keys and the box says why.
``note`` shows ``GlobalShortcuts.note()`` (working, waiting for the desktop, off, or why not: no portal,
no pynput, macOS permission). GUI thread only.
"""

from __future__ import annotations

import sys

from PySide6.QtCore import Signal
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import (
    QCheckBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QKeySequenceEdit,
    QLabel,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from captionist.pipeline.signals import emit
from captionist.settings import ShortcutSettings
from captionist.shortcut_keys import DEFAULT_KEYS, ShortcutAction, find_clash, to_pynput
from captionist.ui.global_shortcuts import GlobalShortcuts
from captionist.ui.pynput_hotkeys import MACOS_PERMISSION_HINT

PORTABLE = QKeySequence.SequenceFormat.PortableText  # what settings.json stores


class ShortcutsBox(QGroupBox):
    settings_changed = Signal()

    def __init__(
        self,
        settings: ShortcutSettings,
        shortcuts: GlobalShortcuts,
        parent: QWidget | None = None,
        *,
        mac: bool = sys.platform == "darwin",
    ) -> None:
        super().__init__("Shortcuts", parent)
        self.settings, self.shortcuts, self._mac = settings, shortcuts, mac
        self.enabled = QCheckBox("Global shortcuts (they work while another app has focus)")
        self.enabled.setChecked(settings.enabled)
        self.edits: dict[ShortcutAction, QKeySequenceEdit] = {}
        self.clear_buttons: dict[ShortcutAction, QPushButton] = {}
        column = QVBoxLayout(self)  # the wrapped notes below the form get their height (a form row may not)
        form = QFormLayout()
        column.addLayout(form)
        form.addRow(self.enabled)
        for action in ShortcutAction:
            edit = QKeySequenceEdit()
            edit.setMaximumSequenceLength(1)  # one combination: a global shortcut cannot be several
            clear = QPushButton("Clear")
            clear.setToolTip("No global shortcut for this action")
            row = QHBoxLayout()
            row.addWidget(edit, 1)
            row.addWidget(clear)
            form.addRow(action.label, row)
            form.labelForField(row).setBuddy(edit)
            clear.setAccessibleName(f"Clear the shortcut for {action.label}")
            edit.editingFinished.connect(lambda a=action: self._recorded(a))
            clear.clicked.connect(lambda _=False, a=action: self.set_key(a, ""))
            self.edits[action], self.clear_buttons[action] = edit, clear
        defaults = QPushButton("Restore defaults")
        form.addRow(defaults)
        self.problem = QLabel()  # why the last recorded keys were not taken
        self.problem.setObjectName("shortcutProblem")
        self.problem.hide()
        self.note = QLabel()
        notes = [self.problem, self.note]
        if mac:  # said before it is needed: macOS asks once, and only a restart picks the answer up
            notes.append(QLabel(MACOS_PERMISSION_HINT))
        for label in notes:
            label.setWordWrap(True)
            column.addWidget(label)
        self._show_keys()
        self._show_state()
        self.enabled.toggled.connect(self._on_enabled)
        defaults.clicked.connect(self.restore_defaults)
        shortcuts.state_changed.connect(self._show_state)

    def set_key(self, action: ShortcutAction, sequence: str) -> bool:
        """Use ``sequence`` (Qt portable text, "" for none) for ``action``; False (and the box says why)
        if it cannot be a global shortcut or clashes with another action's."""
        keys = {**self.settings.keys(), action: sequence}
        try:
            if sequence:
                to_pynput(sequence, mac=self._mac)
            clash = find_clash(keys, mac=self._mac)
        except ValueError as exc:
            clash = str(exc)
        if clash:
            self._refuse(f"{action.label}: {clash}.")
            return False
        self.problem.hide()
        if sequence != self.settings.keys()[action]:
            self.settings.set_key(action, sequence)
            self._changed()
        self._show_keys()
        return True

    def restore_defaults(self) -> None:
        self.problem.hide()
        for action, sequence in DEFAULT_KEYS.items():
            self.settings.set_key(action, sequence)
        self._show_keys()
        self._changed()

    def _recorded(self, action: ShortcutAction) -> None:
        self.set_key(action, self.edits[action].keySequence().toString(PORTABLE))

    def _on_enabled(self, enabled: bool) -> None:
        self.settings.enabled = enabled
        self._changed()

    def _changed(self) -> None:
        emit(self.settings_changed)
        self.shortcuts.apply()

    def _refuse(self, why: str) -> None:
        self.problem.setText(why)
        self.problem.show()
        self._show_keys()

    def _show_keys(self) -> None:
        """The edits show the stored keys (after a refused recording too)."""
        for action, sequence in self.settings.keys().items():
            edit = self.edits[action]
            edit.blockSignals(True)
            edit.setKeySequence(QKeySequence.fromString(sequence, PORTABLE))
            edit.blockSignals(False)
            edit.setEnabled(self.settings.enabled)
            self.clear_buttons[action].setEnabled(self.settings.enabled and bool(sequence))

    def _show_state(self) -> None:
        self.note.setText(self.shortcuts.note())
        self._show_keys()
