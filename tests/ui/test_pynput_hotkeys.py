"""The pynput backend's failures come back as one sentence (ShortcutsUnavailable), never a hang or a
crash. That it hears real keys is tests/ui/test_global_shortcuts_x11.py."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from captionist.settings import ShortcutSettings
from captionist.ui.global_shortcuts import GlobalShortcuts, ShortcutState, ShortcutsUnavailable
from captionist.ui.pynput_hotkeys import _why, start_pynput_hotkeys


def test_without_pynput_shortcuts_are_off_and_say_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynput", None)  # what an uninstalled package looks like to import
    with pytest.raises(ShortcutsUnavailable, match="need the pynput package, which is not installed"):
        start_pynput_hotkeys({"<ctrl>+<alt>+t": lambda: None})
    shortcuts = GlobalShortcuts(ShortcutSettings(), start_pynput_hotkeys, platform_name="xcb", environ={})
    shortcuts.apply()
    assert shortcuts.state is ShortcutState.UNAVAILABLE
    assert shortcuts.note() == "Global shortcuts need the pynput package, which is not installed."


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="X11 only")
@pytest.mark.skipif(importlib.util.find_spec("pynput") is None, reason="pynput is not installed")
@pytest.mark.filterwarnings(
    "ignore::pytest.PytestUnhandledThreadExceptionWarning"
)  # the thread dying is the point
def test_without_an_x_display_shortcuts_cannot_start(monkeypatch: pytest.MonkeyPatch) -> None:
    """pynput fails at import without $DISPLAY, or (imported before, with one) its listener thread
    dies before it is ready; either way this returns with a reason instead of waiting for ever."""
    monkeypatch.delenv("DISPLAY", raising=False)
    with pytest.raises(ShortcutsUnavailable, match=r"^Global shortcuts could not start"):
        start_pynput_hotkeys({"<ctrl>+<alt>+t": lambda: None})


def test_pynputs_import_error_in_a_few_words() -> None:
    no_display = ImportError(
        "this platform is not supported: ('failed to acquire X connection: Bad display name \"\"', "
        "DisplayNameError(''))\n\nTry one of the following resolutions:\n\n * Please make sure ..."
    )
    assert _why(no_display) == "no X display"
    assert _why(ImportError("no backend\nfor   this")) == "no backend for this"
    assert _why(ImportError()) == "ImportError"
