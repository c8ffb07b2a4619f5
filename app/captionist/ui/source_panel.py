"""Source picker: every input and system-audio source, checkable (two checked = mixed), with meters.

Usage::

    panel = SourcePanel()
    panel.set_sources(list_sources(), selected_ids=["3"])
    panel.selected()              # list[Source] in list order
    panel.set_levels({"3": -20.0}) # dBFS per source id, from the running capture
"""

from __future__ import annotations

import math

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QLabel, QListWidget, QListWidgetItem, QProgressBar, QVBoxLayout, QWidget

from captionist.audio.devices import Source
from captionist.pipeline.signals import emit
from captionist.ui.buddy_label import buddy_label

METER_FLOOR_DB = -60.0


def level_to_percent(dbfs: float) -> int:
    """Map dBFS (-60..0) to a 0..100 meter value."""
    if math.isinf(dbfs) or dbfs <= METER_FLOOR_DB:
        return 0
    return int(round(100 * (min(0.0, dbfs) - METER_FLOOR_DB) / -METER_FLOOR_DB))


class SourcePanel(QWidget):
    selection_changed = Signal()

    def __init__(self, note: str | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.list = QListWidget()
        self.list.setToolTip("Tick one source, or a microphone and a system-audio source to mix them")
        self.meters: dict[str, QProgressBar] = {}
        self._meter_box = QVBoxLayout()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(buddy_label("Audio sources", self.list))
        layout.addWidget(self.list, 1)
        layout.addLayout(self._meter_box)
        if note:
            hint = QLabel(note)
            hint.setWordWrap(True)
            hint.setObjectName("hint")
            layout.addWidget(hint)
        self._sources: list[Source] = []
        self.list.itemChanged.connect(self._on_item_changed)

    def set_sources(self, sources: list[Source], selected_ids: list[str]) -> None:
        """Fill the list; ticks ``selected_ids`` (the default input when none of them exists)."""
        self._sources = list(sources)
        ids = {s.id for s in sources}
        chosen = [i for i in selected_ids if i in ids] or [s.id for s in sources if s.is_default][:1]
        self.list.blockSignals(True)
        self.list.clear()
        for s in sources:
            item = QListWidgetItem(s.label())
            item.setData(Qt.ItemDataRole.UserRole, s.id)
            item.setToolTip(f"id {s.id} - {s.hostapi}, {s.channels} ch, {s.samplerate:g} Hz")
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Checked if s.id in chosen else Qt.CheckState.Unchecked)
            self.list.addItem(item)
        self.list.blockSignals(False)
        self._rebuild_meters()

    def selected(self) -> list[Source]:
        ids = {
            self.list.item(i).data(Qt.ItemDataRole.UserRole)
            for i in range(self.list.count())
            if self.list.item(i).checkState() == Qt.CheckState.Checked
        }
        return [s for s in self._sources if s.id in ids]

    def _on_item_changed(self, _item: QListWidgetItem) -> None:
        self._rebuild_meters()
        emit(self.selection_changed)

    def _rebuild_meters(self) -> None:
        while self._meter_box.count():
            widget = self._meter_box.takeAt(0).widget()
            if widget is not None:
                widget.deleteLater()
        self.meters = {}
        for s in self.selected():
            bar = QProgressBar()
            bar.setRange(0, 100)
            bar.setTextVisible(True)
            bar.setFormat(s.name[:40])
            bar.setAccessibleName(f"Level of {s.name}")
            self.meters[s.id] = bar
            self._meter_box.addWidget(bar)

    def set_levels(self, levels: dict[str, float]) -> None:
        for sid, bar in self.meters.items():
            bar.setValue(level_to_percent(levels.get(sid, -math.inf)))
