"""A fake global-shortcut listener factory: hotkeys are pressed by the test, and each press runs its
callback on a thread of its own, the way pynput's listener thread does.

    factory = FakeHotkeyFactory()
    shortcuts = GlobalShortcuts(settings.shortcuts, factory)
    shortcuts.apply()
    factory.listener.press("<ctrl>+<alt>+<shift>+t")   # returns once the callback has run (on its thread)
    factory.fail_with = "no keyboard here"             # the next start raises ShortcutsUnavailable
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping

from captionist.ui.global_shortcuts import ShortcutsUnavailable


class FakeHotkeys:
    def __init__(self, hotkeys: Mapping[str, Callable[[], None]]) -> None:
        self.hotkeys = dict(hotkeys)
        self.stopped = False
        self.callback_threads: list[threading.Thread] = []

    def press(self, hotkey: str) -> None:
        """Run ``hotkey``'s callback on a new thread and wait for it to return (not for Qt to deliver)."""
        thread = threading.Thread(target=self.hotkeys[hotkey], name="fake-pynput-listener")
        self.callback_threads.append(thread)
        thread.start()
        thread.join()

    def stop(self) -> None:
        self.stopped = True


class FakeHotkeyFactory:
    def __init__(self) -> None:
        self.started: list[FakeHotkeys] = []
        self.fail_with: str | None = None  # a ShortcutsUnavailable message for the next starts
        self.crash_with: Exception | None = None  # any other error for the next starts

    def __call__(self, hotkeys: Mapping[str, Callable[[], None]]) -> FakeHotkeys:
        if self.fail_with is not None:
            raise ShortcutsUnavailable(self.fail_with)
        if self.crash_with is not None:
            raise self.crash_with
        listener = FakeHotkeys(hotkeys)
        self.started.append(listener)
        return listener

    @property
    def listener(self) -> FakeHotkeys:
        """The listener started last."""
        return self.started[-1]
