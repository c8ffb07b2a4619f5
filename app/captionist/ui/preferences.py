"""Preferences, in tabs: caption overlay appearance; the transcript file (folder, format,
timestamps), the compute device models run on and starting at login; the global shortcuts; the
caption feed (OBS, browsers) and keyword alerts.

Usage::

    prefs = Preferences(settings, overlay, devices=captionist.engine.compute_devices, shortcuts=shortcuts,
                        login_item=captionist.autostart.login_item_for_platform(), feed=feed, alerts=alerts)
    prefs.settings_changed.connect(save_later)
    prefs.show()

Every control applies at once (the overlay repaints live); nothing needs an OK button.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor, QFont, QShowEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QColorDialog,
    QComboBox,
    QDialog,
    QFileDialog,
    QFontComboBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSlider,
    QSpinBox,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from captionist import paths
from captionist.alerts.keyword_alerts import KeywordAlerts
from captionist.autostart import LoginItem
from captionist.backend_guard import BackendGuard
from captionist.feed.caption_feed import CaptionFeed
from captionist.pipeline.signals import emit
from captionist.settings import Settings
from captionist.transcript import FORMATS
from captionist.ui.alerts_box import AlertsBox
from captionist.ui.feed_box import FeedBox
from captionist.ui.global_shortcuts import GlobalShortcuts
from captionist.ui.overlay import CLICK_THROUGH_SHORTCUT, POSITIONS, CaptionOverlay
from captionist.ui.overlay_drag import WAYLAND_OVERLAY_NOTE
from captionist.ui.shortcuts_box import ShortcutsBox
from captionist.ui.startup_box import StartupBox
from captionist.ui.turned_off_backends import TurnedOffBackends

AUTO_BACKEND = "auto"


class DeviceLike(Protocol):
    """What the compute picker reads of a ``captionist.engine.ComputeDevice``."""

    name: str
    is_default: bool

    @property
    def label(self) -> str: ...


def backend_choices(devices: Sequence[DeviceLike], current: str) -> list[tuple[str, str]]:
    """(label, backend setting) pairs for the picker: Automatic first (naming the device it picks),
    then each device; a saved choice this computer no longer has stays listed, marked, so the user
    sees why a model fails to load instead of silently running elsewhere."""
    default = next((d for d in devices if d.is_default), None)
    out = [(f"Automatic ({default.label})" if default else "Automatic", AUTO_BACKEND)]
    out += [(d.label, d.name.lower()) for d in devices]
    if current.lower() not in {value for _, value in out}:
        out.append((f"{current} (not available on this computer)", current))
    return out


COLOUR_FIELDS = (("text_color", "Text"), ("newest_color", "Newest words"), ("background_color", "Background"))


def _page(*boxes: QWidget) -> QWidget:
    """A tab: ``boxes`` stacked at the top."""
    page = QWidget()
    layout = QVBoxLayout(page)
    for box in boxes:
        layout.addWidget(box)
    layout.addStretch(1)
    return page


class Preferences(QDialog):
    settings_changed = Signal()
    backend_changed = Signal(str)  # the new backend setting; models load on it from now on

    def __init__(
        self,
        settings: Settings,
        overlay: CaptionOverlay,
        parent: QWidget | None = None,
        devices: Callable[[], Sequence[DeviceLike]] | None = None,
        shortcuts: GlobalShortcuts | None = None,
        login_item: LoginItem | None = None,
        feed: CaptionFeed | None = None,
        alerts: KeywordAlerts | None = None,
        backend_guard: BackendGuard | None = None,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Captionist preferences")
        self.settings, self.overlay = settings, overlay
        o = settings.overlay
        self.lines = QSpinBox()
        self.lines.setRange(1, 10)
        self.lines.setValue(o.lines)
        self.font_family = QFontComboBox()
        self.font_family.setCurrentFont(QFont(o.font_family))
        self.font_size = QSpinBox()
        self.font_size.setRange(8, 120)
        self.font_size.setValue(o.font_size)
        self.opacity = QSlider(Qt.Orientation.Horizontal)
        self.opacity.setRange(0, 100)
        self.opacity.setValue(round(o.background_opacity * 100))
        self.outline = QCheckBox("Outline")
        self.outline.setChecked(o.outline)
        self.shadow = QCheckBox("Shadow")
        self.shadow.setChecked(o.shadow)
        self.position = QComboBox()
        self.position.addItems(list(POSITIONS))
        if o.position in POSITIONS:
            self.position.setCurrentText(o.position)
        place = QPushButton("Place on this screen")
        self.click_through = QCheckBox(f"Click-through (undo from the tray menu or {CLICK_THROUGH_SHORTCUT})")
        self.click_through.setChecked(o.click_through)
        self.only_while_captioning = QCheckBox("Only while captioning (hidden when no session runs)")
        self.only_while_captioning.setChecked(o.only_while_captioning)
        self.colour_buttons: dict[str, QPushButton] = {}
        colours = QHBoxLayout()
        for field, label in COLOUR_FIELDS:
            button = QPushButton(label)
            button.setAccessibleName(f"{label} colour")  # the colour itself is only seen
            button.clicked.connect(lambda _=False, f=field: self._pick_colour(f))
            self.colour_buttons[field] = button
            colours.addWidget(button)
        self._show_colours()

        overlay_box = QGroupBox("Captions overlay")
        form = QFormLayout(overlay_box)
        form.addRow("Lines", self.lines)
        form.addRow("Font", self.font_family)
        form.addRow("Size (px)", self.font_size)
        form.addRow("Colours", colours)
        form.addRow("Background opacity", self.opacity)
        effects = QHBoxLayout()
        effects.addWidget(self.outline)
        effects.addWidget(self.shadow)
        form.addRow("Text effect", effects)
        pos_row = QHBoxLayout()
        pos_row.addWidget(self.position)
        pos_row.addWidget(place)
        form.addRow("Position", pos_row)
        form.labelForField(pos_row).setBuddy(self.position)
        form.addRow(self.click_through)
        form.addRow(self.only_while_captioning)
        self.wayland_note: QLabel | None = None  # where the compositor places the overlay, not us
        if overlay.compositor_places_windows():
            self.wayland_note = QLabel(WAYLAND_OVERLAY_NOTE)
            self.wayland_note.setWordWrap(True)
            form.addRow(self.wayland_note)

        self.folder = QLabel(str(settings.transcript_folder()))
        self.folder.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        choose = QPushButton("Choose…")
        choose.setAccessibleName("Choose the transcript folder")
        self.default_folder = QPushButton("Default")
        self.default_folder.setAccessibleName("Use the default transcript folder")
        self.default_folder.setToolTip(f"Back to {paths.default_transcript_dir()}")
        self.default_folder.setEnabled(bool(settings.transcript_dir))
        self.format = QComboBox()
        self.format.addItems(list(FORMATS))
        self.format.setCurrentText(settings.transcript_format)
        self.timestamps = QCheckBox("Timestamps in TXT transcripts")
        self.timestamps.setChecked(settings.transcript_timestamps)
        transcript_box = QGroupBox("Transcript file")
        tform = QFormLayout(transcript_box)
        folder_row = QHBoxLayout()
        folder_row.addWidget(self.folder, 1)
        folder_row.addWidget(choose)
        folder_row.addWidget(self.default_folder)
        tform.addRow("Folder", folder_row)
        tform.addRow("Format", self.format)
        tform.addRow(self.timestamps)

        self.device = QComboBox()
        try:
            found = list(devices()) if devices is not None else []
        except Exception:  # an engine that cannot list devices must not keep Preferences shut
            found = []
        choices = backend_choices(found, settings.backend)
        for label, value in choices:
            self.device.addItem(label, value)
        # backend_choices lists the saved setting (in any case) exactly once
        current = settings.backend.lower()
        self.device.setCurrentIndex(next(i for i, (_, v) in enumerate(choices) if v.lower() == current))
        compute_box = QGroupBox("Compute")
        cform = QFormLayout(compute_box)
        cform.addRow("Run models on", self.device)
        cform.addRow(QLabel("A change reloads the model; a running session keeps its device until it stops."))
        # GPU backends off since they crashed Captionist (backend_guard), each with its "back on"
        self.turned_off = TurnedOffBackends(backend_guard) if backend_guard is not None else None
        if self.turned_off is not None:
            cform.addRow(self.turned_off)

        self.tabs = QTabWidget()
        self.tabs.addTab(_page(overlay_box), "Overlay")
        self.screen_reader = QCheckBox("Send the captions to the screen reader, a sentence at a time")
        self.screen_reader.setToolTip("For speech or a braille display; the focus stays where it is")
        self.screen_reader.setChecked(settings.screen_reader_captions)
        reader_box = QGroupBox("Screen reader")
        QVBoxLayout(reader_box).addWidget(self.screen_reader)
        general = [transcript_box, compute_box, reader_box]
        self.startup_box: StartupBox | None = None  # "Start Captionist when I log in", where supported
        if login_item is not None:
            self.startup_box = StartupBox(settings, login_item)
            self.startup_box.settings_changed.connect(self.settings_changed)
            general.append(self.startup_box)
        self.tabs.addTab(_page(*general), "General")
        self.shortcuts_box: ShortcutsBox | None = None  # the "Shortcuts" group, where global shortcuts exist
        if shortcuts is not None:
            self.shortcuts_box = ShortcutsBox(settings.shortcuts, shortcuts)
            self.shortcuts_box.settings_changed.connect(self.settings_changed)
            self.tabs.addTab(_page(self.shortcuts_box), "Shortcuts")
        self.feed_box: FeedBox | None = None  # the caption feed for OBS and browsers
        self.alerts_box: AlertsBox | None = None
        feed_page = []
        if feed is not None:
            self.feed_box = FeedBox(settings.feed, feed)
            self.feed_box.settings_changed.connect(self.settings_changed)
            feed_page.append(self.feed_box)
        if alerts is not None:
            self.alerts_box = AlertsBox(settings.alerts, alerts)
            self.alerts_box.settings_changed.connect(self.settings_changed)
            feed_page.append(self.alerts_box)
        if feed_page:
            self.tabs.addTab(_page(*feed_page), "Feed && alerts")
        layout = QVBoxLayout(self)
        layout.addWidget(self.tabs)

        for spin in (self.lines, self.font_size):
            spin.valueChanged.connect(self._apply_overlay)
        self.font_family.currentFontChanged.connect(self._apply_overlay)
        self.opacity.valueChanged.connect(self._apply_overlay)
        self.outline.toggled.connect(self._apply_overlay)
        self.shadow.toggled.connect(self._apply_overlay)
        self.only_while_captioning.toggled.connect(self._apply_overlay)
        place.clicked.connect(lambda: self.overlay.apply_position(self.position.currentText()))
        self.click_through.toggled.connect(self.overlay.set_click_through)
        self.overlay.click_through_changed.connect(self._show_click_through)
        choose.clicked.connect(self._choose_folder)
        self.default_folder.clicked.connect(lambda: self.set_folder(None))
        self.format.currentTextChanged.connect(self._apply_transcript)
        self.timestamps.toggled.connect(self._apply_transcript)
        self.screen_reader.toggled.connect(self._apply_screen_reader)
        self.device.currentIndexChanged.connect(self._apply_device)

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 - Qt override
        """Each time Preferences opens, the login item is read again (it may have changed outside)."""
        if self.startup_box is not None:
            self.startup_box.refresh()
        super().showEvent(event)

    def _show_click_through(self, enabled: bool) -> None:
        """The overlay's state changed elsewhere (shortcut, tray): show it without re-applying."""
        self.click_through.blockSignals(True)
        self.click_through.setChecked(enabled)
        self.click_through.blockSignals(False)

    def _apply_overlay(self, *_: object) -> None:
        o = self.settings.overlay
        o.lines = self.lines.value()
        o.font_family = self.font_family.currentFont().family()
        o.font_size = self.font_size.value()
        o.background_opacity = self.opacity.value() / 100
        o.outline, o.shadow = self.outline.isChecked(), self.shadow.isChecked()
        o.only_while_captioning = self.only_while_captioning.isChecked()
        self.overlay.apply_settings()
        emit(self.settings_changed)

    def set_colour(self, field: str, colour: str) -> None:
        if not QColor(colour).isValid():
            raise ValueError(f"not a colour: {colour!r}")
        setattr(self.settings.overlay, field, QColor(colour).name())
        self._show_colours()
        self.overlay.apply_settings()
        emit(self.settings_changed)

    def _pick_colour(self, field: str) -> None:
        chosen = QColorDialog.getColor(QColor(getattr(self.settings.overlay, field)), self)
        if chosen.isValid():
            self.set_colour(field, chosen.name())

    def _show_colours(self) -> None:
        for field, button in self.colour_buttons.items():
            colour = getattr(self.settings.overlay, field)
            text = "#000000" if QColor(colour).lightness() > 128 else "#ffffff"
            button.setStyleSheet(f"background: {colour}; color: {text};")
            button.setAccessibleDescription(f"now {colour}")

    def set_folder(self, folder: Path | None) -> None:
        """Write transcripts to ``folder`` from the next session on (None: the default folder)."""
        self.settings.transcript_dir = str(folder) if folder is not None else ""
        self.folder.setText(str(self.settings.transcript_folder()))
        self.default_folder.setEnabled(folder is not None)
        emit(self.settings_changed)

    def _choose_folder(self) -> None:
        name = QFileDialog.getExistingDirectory(
            self, "Transcript folder", str(self.settings.transcript_folder())
        )
        if name:
            self.set_folder(Path(name))

    def _apply_transcript(self, *_: object) -> None:
        self.settings.transcript_format = self.format.currentText()
        self.settings.transcript_timestamps = self.timestamps.isChecked()
        emit(self.settings_changed)

    def _apply_screen_reader(self, on: bool) -> None:
        self.settings.screen_reader_captions = on
        emit(self.settings_changed)

    def _apply_device(self, *_: object) -> None:
        value = str(self.device.currentData())
        if value == self.settings.backend:
            return
        self.settings.backend = value
        emit(self.settings_changed)
        emit(self.backend_changed, value)
