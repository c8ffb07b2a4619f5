"""Preferences' "Startup" group: "Start Captionist when I log in", showing what is on disk.

Usage::

    box = StartupBox(settings, login_item_for_platform(), command=launch_command)
    box.settings_changed.connect(save_later)
    box.set_start_at_login(True)      # what ticking the box does; False if the entry could not be made

The box shows the login item's real state (``LoginItem.state()``), not the setting: an entry removed
by hand shows unticked. ``Settings.start_at_login`` records the user's last choice. An error (a
read-only folder, an entry another program wrote) is shown under the box in one line and the box
goes back to the real state; nothing here raises. GUI thread only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QCheckBox, QGroupBox, QLabel, QVBoxLayout, QWidget

from captionist.autostart import LoginItem, LoginItemError, LoginItemState, launch_command
from captionist.autostart.login_item import state_problem
from captionist.pipeline.signals import emit
from captionist.settings import Settings


class StartupBox(QGroupBox):
    settings_changed = Signal()

    def __init__(
        self,
        settings: Settings,
        login_item: LoginItem,
        parent: QWidget | None = None,
        *,
        command: Callable[[], Sequence[str]] = launch_command,
    ) -> None:
        super().__init__("Startup", parent)
        self.settings, self.login_item, self._command = settings, login_item, command
        self.start_at_login = QCheckBox("Start Captionist when I log in")
        self.message = QLabel()
        self.message.setObjectName("startupMessage")
        self.message.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.addWidget(self.start_at_login)
        layout.addWidget(self.message)
        self.refresh()
        self.start_at_login.toggled.connect(self.set_start_at_login)

    def refresh(self) -> LoginItemState:
        """Show the login item's state now (and, when Captionist must leave the entry alone, why)."""
        state = self.login_item.state()
        self._show_checked(state is LoginItemState.ON)
        self._show_message(state_problem(state, self.login_item.location()))
        return state

    def set_start_at_login(self, enabled: bool) -> bool:
        """Record the choice and create or remove the login item; False (and a message) when that failed."""
        self.settings.start_at_login = enabled
        emit(self.settings_changed)
        try:
            if enabled:
                self.login_item.enable(self._command())
            else:
                self.login_item.disable()
        except LoginItemError as exc:
            self.refresh()
            self._show_message(f"Could not {'turn on' if enabled else 'turn off'} start at login: {exc}")
            return False
        self.refresh()
        return True

    def message_text(self) -> str:
        return self.message.text()

    def _show_checked(self, checked: bool) -> None:
        self.start_at_login.blockSignals(True)
        self.start_at_login.setChecked(checked)
        self.start_at_login.blockSignals(False)

    def _show_message(self, text: str) -> None:
        self.message.setText(text)
        self.message.setVisible(bool(text))
