"""``emit(signal, *args)``: emit a Qt signal from Python, working around a PySide6 refcount bug.

PySide6 6.12.0 on Python < 3.12 returns ``True`` from ``SignalInstance.emit`` without taking a
reference, so every Python-side emit steals one reference to ``True``; a long session eventually
frees ``True`` and the interpreter aborts ("bool_dealloc: deallocating True or False"). At import
we measure whether this build does that and, if so, give the reference back after each emit.
All of Captionist's Python-side emits go through ``emit``; signals emitted by Qt itself are not
affected.
"""

from __future__ import annotations

import ctypes
import sys
from typing import Any

from PySide6.QtCore import QObject, Signal


class _Probe(QObject):
    ping = Signal()


def _measure_stolen_true() -> bool:
    probe = _Probe()
    deltas = []
    for _ in range(3):
        before = sys.getrefcount(True)
        probe.ping.emit()
        deltas.append(sys.getrefcount(True) - before)
    return deltas == [-1, -1, -1]


EMIT_STEALS_TRUE = _measure_stolen_true()
if EMIT_STEALS_TRUE:  # restore the three references the probe took
    for _ in range(3):
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(True))


def emit(signal: Any, *args: Any) -> None:
    """``signal.emit(*args)``, compensating for the stolen ``True`` where this PySide6 steals it."""
    result = signal.emit(*args)
    if EMIT_STEALS_TRUE and result is True:
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(True))
