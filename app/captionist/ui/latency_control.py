"""The latency control: a slider over the chosen model's latencies, shown in ms.

Usage::

    control = LatencyControl()
    control.set_choices(info.latencies_ms, settings.latency_for(info))   # a model's own choices
    control.latency_changed.connect(controller.set_latency)              # int ms, on every user change
    control.value_ms()                                                   # None until a model is set

The choices are the model's (``ModelInfo.latencies_ms``, ascending); nothing here assumes a
particular model. A model with one latency shows it with the slider disabled. GUI thread only.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QSlider, QWidget

from captionist.pipeline.signals import emit
from captionist.ui.buddy_label import buddy_label


class LatencyControl(QWidget):
    latency_changed = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._choices: tuple[int, ...] = ()
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setPageStep(1)
        self.slider.setTickPosition(QSlider.TickPosition.TicksBelow)
        self.slider.setToolTip("Lower: captions sooner but less accurate. Higher: more accurate, later.")
        self.label = QLabel()
        self.label.setMinimumWidth(110)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(buddy_label("Latency", self.slider))
        layout.addWidget(self.slider, 1)
        layout.addWidget(self.label)
        self.slider.valueChanged.connect(self._on_moved)
        self.clear()

    def choices(self) -> tuple[int, ...]:
        return self._choices

    def value_ms(self) -> int | None:
        return self._choices[self.slider.value()] if self._choices else None

    def set_choices(self, choices: Sequence[int], value_ms: int) -> None:
        """Offer ``choices`` (ms, ascending) with the one nearest ``value_ms`` selected, without
        emitting ``latency_changed``."""
        self._choices = tuple(choices)
        if not self._choices:
            self.clear()
            return
        index = min(range(len(self._choices)), key=lambda i: abs(self._choices[i] - value_ms))
        self.slider.blockSignals(True)
        self.slider.setRange(0, len(self._choices) - 1)
        self.slider.setValue(index)
        self.slider.blockSignals(False)
        self.slider.setEnabled(len(self._choices) > 1)
        self._show()

    def clear(self, text: str = "—") -> None:
        """No model (yet): nothing to choose; ``text`` says why."""
        self._choices = ()
        self.slider.blockSignals(True)
        self.slider.setRange(0, 0)
        self.slider.blockSignals(False)
        self.slider.setEnabled(False)
        self.label.setText(text)
        self.slider.setAccessibleDescription(f"{text}. {self.slider.toolTip()}")

    def _show(self) -> None:
        value = self.value_ms()
        only = " (fixed)" if len(self._choices) == 1 else ""
        self.label.setText(f"{value} ms{only}")
        # the slider's own value is a position (0, 1, 2…): a screen reader says the milliseconds
        self.slider.setAccessibleDescription(f"{value} ms{only}. {self.slider.toolTip()}")

    def _on_moved(self, _index: int) -> None:
        if not self._choices:
            return
        self._show()
        emit(self.latency_changed, self.value_ms())
