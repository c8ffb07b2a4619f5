"""Larger or smaller text in one text widget, from the keyboard and the mouse wheel, remembered.

Usage::

    zoom = TextZoom(view.text, keys_in=view)   # Ctrl++ / Ctrl+= / Ctrl+- / Ctrl+0, and Ctrl+wheel
    zoom.set_size(settings.transcript_text_pt)  # 0: the default size
    zoom.changed.connect(remember)               # float: the size in points (0 when back to default)

Each step is ``STEP_PT`` points, between ``MIN_PT`` and ``MAX_PT``. The keys work anywhere in
``keys_in``'s window; the wheel on the widget itself (Qt's own Ctrl+wheel zoom of read-only text
is replaced, so that it is bounded and remembered the same way).
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut, QWheelEvent
from PySide6.QtWidgets import QAbstractScrollArea, QWidget

from captionist.pipeline.signals import emit

STEP_PT = 1.0
MIN_PT = 6.0
MAX_PT = 72.0


class TextZoom(QObject):
    changed = Signal(float)

    def __init__(self, widget: QAbstractScrollArea, keys_in: QWidget) -> None:
        super().__init__(widget)
        self._widget = widget
        self._default_pt = widget.font().pointSizeF()
        for keys, step in (
            (QKeySequence.keyBindings(QKeySequence.StandardKey.ZoomIn) + [QKeySequence("Ctrl+=")], STEP_PT),
            (QKeySequence.keyBindings(QKeySequence.StandardKey.ZoomOut), -STEP_PT),
        ):
            for key in dict.fromkeys(k.toString() for k in keys):
                QShortcut(QKeySequence(key), keys_in, lambda s=step: self.step(s))
        QShortcut(QKeySequence("Ctrl+0"), keys_in, lambda: self.set_size(0.0, notify=True))
        widget.viewport().installEventFilter(self)

    def size(self) -> float:
        """The size in points now."""
        return self._widget.font().pointSizeF()

    def set_size(self, pt: float, notify: bool = False) -> None:
        """``pt`` points (bounded), or the default size for 0."""
        size = self._default_pt if pt <= 0 else min(MAX_PT, max(MIN_PT, pt))
        font = self._widget.font()
        font.setPointSizeF(size)
        self._widget.setFont(font)
        if notify:
            emit(self.changed, 0.0 if pt <= 0 else size)

    def step(self, by: float) -> None:
        self.set_size(self.size() + by, notify=True)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt's name)
        if event.type() == QEvent.Type.Wheel and isinstance(event, QWheelEvent):
            if event.modifiers() & Qt.KeyboardModifier.ControlModifier:
                delta = event.angleDelta().y()
                if delta:
                    self.step(STEP_PT if delta > 0 else -STEP_PT)
                return True
        return False
