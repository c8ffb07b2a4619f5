"""The main window's Help button: "Help" (the manual, in the browser) and "About Captionist".

Usage::

    button = HelpMenu(facts=lambda: AboutFacts.gather(settings, model_info), notice=window.show_notice)
    button.open_help()       # the QUrl opened, or None after a notice that nothing could be opened
    button.show_about()      # the non-modal About dialog, created once, its facts gathered anew

``facts`` is called each time About is shown, so the dialog names the model loaded now. Help opens
the project page or the bundled README (``help_link``) through ``open_url``; tests record it.
GUI thread only.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QUrl
from PySide6.QtGui import QAction, QDesktopServices
from PySide6.QtWidgets import QMenu, QPushButton, QWidget

from captionist.ui.about_dialog import AboutDialog, AboutFacts
from captionist.ui.help_link import open_help


class HelpMenu(QPushButton):
    def __init__(
        self,
        facts: Callable[[], AboutFacts],
        notice: Callable[[str], None],
        open_url: Callable[[QUrl], bool] = QDesktopServices.openUrl,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__("Help", parent)
        self._facts, self._notice, self._open_url = facts, notice, open_url
        menu = QMenu(self)
        self.help_action = QAction("Help", menu)
        self.about_action = QAction("About Captionist", menu)
        menu.addAction(self.help_action)
        menu.addAction(self.about_action)
        self.setMenu(menu)
        self.about: AboutDialog | None = None
        self.help_action.triggered.connect(self.open_help)
        self.about_action.triggered.connect(self.show_about)

    def show_about(self) -> AboutDialog:
        """The About dialog (non-modal), its facts gathered now."""
        facts = self._facts()
        if self.about is None:
            self.about = AboutDialog(facts, self.window(), open_help=self.open_help)
        else:
            self.about.set_facts(facts)
        self.about.show()
        self.about.raise_()
        return self.about

    def open_help(self) -> QUrl | None:
        """Open the help (project page or README) in the desktop's browser; a notice when it cannot."""
        opened = open_help(self._open_url)
        if opened is None:
            self._notice("could not open the help: no browser or README was found")
        return opened
