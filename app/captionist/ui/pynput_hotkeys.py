"""The real global-shortcut listener: pynput's ``GlobalHotKeys``, imported only when shortcuts start.

Usage::

    listener = start_pynput_hotkeys({"<ctrl>+<alt>+<shift>+t": on_click_through})  # started and ready
    listener.stop()  # ended

pynput listens on X11 through the RECORD extension, on Windows through a low-level keyboard hook and
on macOS through a Quartz event tap; it never swallows a key, so the focused app still gets it.
Callbacks run on pynput's own thread (see ``GlobalShortcuts`` for the hand-over to Qt).

Every way this can fail raises ``ShortcutsUnavailable`` with one sentence for Preferences: pynput not
installed, no X display (pynput fails at import), a listener thread that dies before it is ready (no
RECORD extension) or, on macOS, an event tap refused for want of the Accessibility / Input Monitoring
permission (pynput's listener then ends at once). pynput's ``wait()`` never returns for a listener
that died before it was ready (nor ``stop()``, which waits too), so readiness is awaited from a
helper thread while watching the listener thread.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from captionist.ui.global_shortcuts import ShortcutsUnavailable

START_TIMEOUT_S = 5.0  # an X11 listener is ready in milliseconds; this only bounds a broken one
STOP_TIMEOUT_S = 1.0  # a listener ends in milliseconds once told; this only bounds a stuck one
MACOS_PERMISSION_HINT = (
    "On macOS, global shortcuts need Captionist to be allowed under System Settings › Privacy & "
    "Security › Accessibility and Input Monitoring."
)
MACOS_PERMISSION_NOTE = (
    "macOS has not allowed Captionist to see the keyboard: turn it on under System Settings › "
    "Privacy & Security › Accessibility and Input Monitoring, then restart Captionist."
)


class PynputHotkeys:
    """A started ``pynput.keyboard.GlobalHotKeys``.

    ``stop()`` ends the listener's thread and its X connections before it returns (bounded by
    STOP_TIMEOUT_S). pynput 1.8 alone would not: on X11 it queues the RECORD disable request on the
    connection that is busy recording, without flushing it, so the thread would go on receiving every
    key until the next input event (pynput PR #583). The X RECORD extension takes that request on
    another connection, so ``stop()`` sends it again on the listener's second one."""

    def __init__(self, listener: Any) -> None:
        self._listener = listener

    def stop(self) -> None:
        self._listener.stop()
        if threading.current_thread() is self._listener:  # from a callback: it ends when that returns
            return
        _disable_x11_recording(self._listener)
        self._listener.join(STOP_TIMEOUT_S)


def _disable_x11_recording(listener: Any) -> None:
    """Send RECORD's disable request for ``listener``'s context on its non-recording connection
    (pynput's Xorg listener: ``_display_stop``; other platforms have neither attribute)."""
    display, context = getattr(listener, "_display_stop", None), getattr(listener, "_context", None)
    if display is None or context is None:  # not X11, or stopped before it began to record
        return
    try:
        display.record_disable_context(context)
        display.flush()
    except Exception:  # the thread has already closed it, or the X server is gone: nothing to end
        pass


def start_pynput_hotkeys(hotkeys: Mapping[str, Callable[[], None]]) -> PynputHotkeys:
    """Start listening for ``hotkeys`` (pynput format); returns once the listener is ready."""
    if importlib.util.find_spec("pynput") is None:
        raise ShortcutsUnavailable("Global shortcuts need the pynput package, which is not installed.")
    try:
        from pynput import keyboard
    except ImportError as exc:  # pynput picks its backend at import: no X display, no backend
        raise ShortcutsUnavailable(
            f"Global shortcuts could not start ({_why(exc)}); use the tray menu."
        ) from exc
    listener = keyboard.GlobalHotKeys(dict(hotkeys))
    listener.start()
    if not _wait_ready(listener):
        raise ShortcutsUnavailable(
            "Global shortcuts could not start: the keyboard listener stopped (on X11 it needs the "
            "RECORD extension); use the tray menu."
        )
    if not listener.is_alive():  # ready, then ended: on macOS, the event tap was refused
        if sys.platform == "darwin":
            raise ShortcutsUnavailable(MACOS_PERMISSION_NOTE)
        raise ShortcutsUnavailable("Global shortcuts could not start: the keyboard listener stopped.")
    return PynputHotkeys(listener)


def _wait_ready(listener: Any) -> bool:
    """Whether ``listener`` became ready; False if its thread died first or START_TIMEOUT_S passed."""
    ready = threading.Event()

    def wait() -> None:
        listener.wait()
        ready.set()

    threading.Thread(target=wait, name="pynput-ready", daemon=True).start()
    deadline = time.monotonic() + START_TIMEOUT_S
    while not ready.wait(0.05):
        if not listener.is_alive() or time.monotonic() > deadline:
            return ready.is_set()
    return True


def _why(exc: ImportError) -> str:
    """pynput's import error in a few words ("no X display" for the usual one)."""
    text = str(exc)
    if "X connection" in text or "DISPLAY" in text:
        return "no X display"
    return " ".join(text.split())[:120] or type(exc).__name__
