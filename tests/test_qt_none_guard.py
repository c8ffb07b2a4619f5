"""The guard against PySide6 builds that lose a reference to None on every call returning nothing."""

from __future__ import annotations

import ctypes
import subprocess
import sys
import textwrap

import pytest

from captionist.qt_none_guard import PROBE_CALLS, RESERVE, guard_none_refcount, none_refs_lost

pytestmark = pytest.mark.skipif(sys.version_info >= (3, 12), reason="None is immortal on Python 3.12+")


def lose_a_reference_to_none() -> None:
    """What PySide6 6.12.0's void methods do on Python 3.11."""
    ctypes.c_ssize_t.from_address(id(None)).value -= 1


def test_the_loss_is_measured() -> None:
    lost = none_refs_lost(lose_a_reference_to_none, 1000)
    ctypes.c_ssize_t.from_address(id(None)).value += 1000  # given back
    assert lost == 1000
    assert abs(none_refs_lost(lambda: None, 1000)) < 50


def test_a_losing_interpreter_gets_a_reserve_and_a_sound_one_is_left_alone() -> None:
    count = ctypes.c_ssize_t.from_address(id(None))
    before = count.value
    assert guard_none_refcount(lambda: None) is False
    assert abs(count.value - before) < 50
    assert guard_none_refcount(lose_a_reference_to_none) is True
    assert count.value - before > RESERVE - 2 * PROBE_CALLS
    count.value -= RESERVE - PROBE_CALLS  # back to about where it was


CHILD = textwrap.dedent(
    """
    import ctypes, sys
    from captionist.qt_none_guard import guard_none_refcount
    def lose():
        ctypes.c_ssize_t.from_address(id(None)).value -= 1
    n = sys.getrefcount(None) + 100_000   # more references than None has: CPython would abort
    if sys.argv[1] == "guarded":
        assert guard_none_refcount(lose)
    for _ in range(n):
        lose()
    print("alive")
    """
)


@pytest.mark.parametrize("mode", ["guarded", "unguarded"])
def test_without_the_guard_the_process_aborts_and_with_it_it_lives(mode: str) -> None:
    done = subprocess.run([sys.executable, "-c", CHILD, mode], capture_output=True, text=True, timeout=120)
    if mode == "guarded":
        assert done.returncode == 0 and done.stdout.strip() == "alive", done.stderr
    else:
        assert done.returncode != 0 and "none_dealloc" in done.stderr


def test_this_pyside6_is_guarded_if_it_needs_it() -> None:
    from PySide6.QtCore import QObject

    guard_none_refcount()
    probe = QObject()
    before = sys.getrefcount(None)
    for _ in range(20_000):
        probe.setObjectName("x")
    assert sys.getrefcount(None) > 1000 and before > 1000  # never near zero
