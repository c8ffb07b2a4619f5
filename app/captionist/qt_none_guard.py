"""A guard against PySide6 builds that drop a reference to ``None`` on every call that returns nothing.

Usage (once, before the Qt application runs)::

    from captionist.qt_none_guard import guard_none_refcount
    guard_none_refcount()        # True when this interpreter needed it

PySide6 6.12.0's wheels (``cp310-abi3``) return ``None`` from every ``void`` C++ method without
taking a reference, which is harmless on Python 3.12 and later, where ``None`` is immortal, but on
Python 3.10 and 3.11 takes one reference from ``None`` per call. A live session paints its overlay
many times a second, so ``None``'s count reaches zero within minutes and CPython aborts with "Fatal
Python error: none_dealloc" (seen after 4 minutes of captioning in a soak on this machine;
PySide6 6.11.3 does not do it). The app runs on 6.12, the release its soaks and CI ran on, with this
guard, and with ``pipeline.signals.emit`` for the references to ``True``.

It measures the loss with a few thousand ``QObject.setObjectName`` calls. Where there is one, it adds
``RESERVE`` references to ``None`` (which is never freed, so references given to it are never
missed): at the thousand a second a busy window drops, that lasts over thirty years. The count is
``ob_refcnt``, the first field of every CPython object; the guard checks that the field it found
holds about what ``sys.getrefcount`` reports before it writes (where it is not the count it holds
an address), and does nothing where it does not.
"""

from __future__ import annotations

import ctypes
import platform
import sys
from collections.abc import Callable

PROBE_CALLS = 4000
RESERVE = 1 << 40
_guarded = False  # the reserve was given for PySide6 in this process
LAYOUT_SLACK = 10_000  # other threads may take or drop references to None between the two reads


def _pyside_void_call() -> Callable[[], object]:
    from PySide6.QtCore import QObject

    probe = QObject()
    return lambda: probe.setObjectName("captionist-probe")


def none_refs_lost(call: Callable[[], object], calls: int = PROBE_CALLS) -> int:
    """How many references to ``None`` ``calls`` calls of ``call`` took and did not give back."""
    before = sys.getrefcount(None)
    for _ in range(calls):
        call()
    return before - sys.getrefcount(None)


def guard_none_refcount(call: Callable[[], object] | None = None) -> bool:
    """Give ``None`` a reserve of references if calls like ``call`` (default: a PySide6 method that
    returns nothing) lose them on this interpreter; True when it did. Never raises."""
    global _guarded
    if _guarded and call is None:
        return True
    if sys.version_info >= (3, 12) or platform.python_implementation() != "CPython":
        return False  # None is immortal there, or counted differently
    try:
        lost = none_refs_lost(call or _pyside_void_call())
    except Exception:  # no Qt here: nothing to guard
        return False
    if lost < PROBE_CALLS // 2:
        return False
    count = ctypes.c_ssize_t.from_address(id(None))
    if abs(count.value - sys.getrefcount(None)) > LAYOUT_SLACK:  # not the count: leave it alone
        return False
    count.value += RESERVE
    _guarded = _guarded or call is None  # a test's own call does not stand for PySide6
    return True
