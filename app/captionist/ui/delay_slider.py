"""The delay slider: 80-1200 ms in 80 ms steps plus 2400 ms, shown in ms, mapped to delay tokens.

Usage::

    slider = DelaySlider(480)
    slider.delay_changed.connect(controller.set_delay)   # int ms, emitted on every user change
    slider.value_ms(), slider.delay_tokens()
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QSlider, QWidget

from captionist.engine import DELAY_CHOICES_MS, delay_ms_to_tokens
from captionist.pipeline.signals import emit


class DelaySlider(QWidget):
    delay_changed = Signal(int)

    def __init__(self, delay_ms: int = 480, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setRange(0, len(DELAY_CHOICES_MS) - 1)
        self.slider.setPageStep(1)
        self.slider.setTickPosition(QSlider.TickPosition.TicksBelow)
        self.slider.setToolTip("Lower: captions sooner but less accurate. Higher: more accurate, later.")
        self.label = QLabel()
        self.label.setMinimumWidth(130)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(QLabel("Delay"))
        layout.addWidget(self.slider, 1)
        layout.addWidget(self.label)
        self.set_value_ms(delay_ms)
        self.slider.valueChanged.connect(self._on_moved)

    def value_ms(self) -> int:
        return DELAY_CHOICES_MS[self.slider.value()]

    def delay_tokens(self) -> int:
        return delay_ms_to_tokens(self.value_ms())

    def set_value_ms(self, delay_ms: int) -> None:
        """Select the choice nearest ``delay_ms`` (without emitting ``delay_changed``)."""
        index = min(range(len(DELAY_CHOICES_MS)), key=lambda i: abs(DELAY_CHOICES_MS[i] - delay_ms))
        self.slider.blockSignals(True)
        self.slider.setValue(index)
        self.slider.blockSignals(False)
        self._show()

    def _show(self) -> None:
        tokens = self.delay_tokens()
        self.label.setText(f"{self.value_ms()} ms ({tokens} token{'s' if tokens != 1 else ''})")

    def _on_moved(self, _index: int) -> None:
        self._show()
        emit(self.delay_changed, self.value_ms())
