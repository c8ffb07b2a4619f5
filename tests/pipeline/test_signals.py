from __future__ import annotations

import sys

from PySide6.QtCore import QObject, Signal

from captionist.pipeline.signals import emit


class _Sender(QObject):
    value = Signal(object)


def test_emit_keeps_refcount_of_true_balanced() -> None:
    sender, got = _Sender(), []
    sender.value.connect(got.append)
    before = sys.getrefcount(True)
    for i in range(500):
        emit(sender.value, i)
    assert got == list(range(500))
    assert sys.getrefcount(True) - before in range(-5, 6)
