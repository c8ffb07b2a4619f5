"""Preferences' "Shortcuts" group: recorded keys apply at once (the listener restarts with them), keys
that cannot be used are refused with the reason, and the note says whether the shortcuts work."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence

from captionist.settings import Settings
from captionist.shortcut_keys import DEFAULT_KEYS, ShortcutAction
from captionist.ui.global_shortcuts import WAYLAND_NOTE, GlobalShortcuts, ShortcutState
from captionist.ui.overlay import CaptionOverlay
from captionist.ui.preferences import Preferences
from captionist.ui.pynput_hotkeys import MACOS_PERMISSION_HINT
from captionist.ui.shortcuts_box import ShortcutsBox
from tests.fakes.fake_hotkeys import FakeHotkeyFactory

M = Qt.KeyboardModifier
CTRL_ALT_SHIFT = M.ControlModifier | M.AltModifier | M.ShiftModifier


@pytest.fixture
def parts(qtbot):
    """(Preferences, its ShortcutsBox, GlobalShortcuts, the fake listener factory), shortcuts started."""
    settings = Settings()
    overlay = CaptionOverlay(settings.overlay)
    factory = FakeHotkeyFactory()
    shortcuts = GlobalShortcuts(settings.shortcuts, factory, platform_name="xcb", environ={}, mac=False)
    shortcuts.apply()
    prefs = Preferences(settings, overlay, shortcuts=shortcuts)
    qtbot.addWidget(overlay)
    qtbot.addWidget(prefs)
    assert prefs.shortcuts_box is not None
    return prefs, prefs.shortcuts_box, shortcuts, factory


def shown(box: ShortcutsBox) -> dict[ShortcutAction, str]:
    return {
        a: e.keySequence().toString(QKeySequence.SequenceFormat.PortableText) for a, e in box.edits.items()
    }


def test_the_group_shows_the_settings_and_the_state(parts) -> None:
    prefs, box, shortcuts, _ = parts
    assert box.title() == "Shortcuts" and box.enabled.isChecked()
    assert shown(box) == DEFAULT_KEYS
    assert box.note.text() == shortcuts.note() and shortcuts.state is ShortcutState.ACTIVE
    assert [box.edits[a].maximumSequenceLength() for a in ShortcutAction] == [1, 1, 1]


def test_recording_keys_applies_them_live(parts, qtbot) -> None:
    prefs, box, shortcuts, factory = parts
    edit = box.edits[ShortcutAction.CLICK_THROUGH]
    edit.setFocus()
    with qtbot.waitSignal(prefs.settings_changed):
        qtbot.keyClick(edit, Qt.Key.Key_K, CTRL_ALT_SHIFT)  # as a user records it
    assert prefs.settings.shortcuts.click_through == "Ctrl+Alt+Shift+K"
    assert "<ctrl>+<alt>+<shift>+k" in factory.listener.hotkeys and len(factory.started) == 2
    assert "<ctrl>+<alt>+<shift>+t" not in factory.listener.hotkeys
    assert factory.started[0].stopped
    assert shortcuts.active_keys()[ShortcutAction.CLICK_THROUGH] == "Ctrl+Alt+Shift+K"


def test_keys_that_cannot_be_a_global_shortcut_are_refused_with_the_reason(parts, qtbot) -> None:
    prefs, box, _, factory = parts
    edit = box.edits[ShortcutAction.START_STOP]
    edit.setFocus()
    qtbot.keyClick(edit, Qt.Key.Key_K)  # no modifier: it would fire while typing
    assert prefs.settings.shortcuts.start_stop == "Ctrl+Alt+Shift+S" and len(factory.started) == 1
    assert shown(box)[ShortcutAction.START_STOP] == "Ctrl+Alt+Shift+S"  # the edit shows what is stored
    assert box.problem.isVisibleTo(box)
    assert (
        box.problem.text()
        == "Start/stop captions: K: needs Ctrl, Alt or Meta too, or it would fire while you type."
    )


def test_keys_another_action_uses_are_refused(parts) -> None:
    prefs, box, _, factory = parts
    assert not box.set_key(ShortcutAction.START_STOP, "Ctrl+Alt+Shift+T")
    assert box.problem.text() == (
        "Start/stop captions: Ctrl+Alt+Shift+T is used twice (Start/stop captions and Click-through on/off)."
    )
    assert not box.set_key(ShortcutAction.START_STOP, "Ctrl+Alt+T")  # Ctrl+Alt+Shift+T would fire it too
    assert "would also fire Ctrl+Alt+T" in box.problem.text()
    assert prefs.settings.shortcuts.start_stop == "Ctrl+Alt+Shift+S" and len(factory.started) == 1
    assert box.set_key(ShortcutAction.START_STOP, "Ctrl+Alt+F8")  # a good one clears the complaint
    assert not box.problem.isVisibleTo(box) and "<ctrl>+<alt>+<f8>" in factory.listener.hotkeys


def test_clear_leaves_an_action_without_a_shortcut_and_defaults_restore(parts, qtbot) -> None:
    prefs, box, _, factory = parts
    with qtbot.waitSignal(prefs.settings_changed):
        box.clear_buttons[ShortcutAction.SHOW_OVERLAY].click()
    assert prefs.settings.shortcuts.show_overlay == "" and shown(box)[ShortcutAction.SHOW_OVERLAY] == ""
    assert "<ctrl>+<alt>+<shift>+o" not in factory.listener.hotkeys
    assert not box.clear_buttons[ShortcutAction.SHOW_OVERLAY].isEnabled()
    box.set_key(ShortcutAction.CLICK_THROUGH, "Ctrl+Alt+K")
    box.restore_defaults()
    assert prefs.settings.shortcuts.keys() == DEFAULT_KEYS and shown(box) == DEFAULT_KEYS
    assert len(factory.listener.hotkeys) == 3


def test_the_switch_turns_them_off_and_on(parts, qtbot) -> None:
    prefs, box, shortcuts, factory = parts
    with qtbot.waitSignal(prefs.settings_changed):
        box.enabled.setChecked(False)
    assert not prefs.settings.shortcuts.enabled and factory.listener.stopped
    assert shortcuts.state is ShortcutState.OFF and box.note.text() == "Global shortcuts are off."
    assert not box.edits[ShortcutAction.START_STOP].isEnabled()
    box.enabled.setChecked(True)
    assert shortcuts.state is ShortcutState.ACTIVE and not factory.listener.stopped
    assert box.edits[ShortcutAction.START_STOP].isEnabled()


def test_the_note_says_why_they_do_not_work(qtbot) -> None:
    settings = Settings()
    overlay = CaptionOverlay(settings.overlay)
    factory = FakeHotkeyFactory()
    shortcuts = GlobalShortcuts(settings.shortcuts, factory, platform_name="wayland", environ={}, mac=False)
    shortcuts.apply()
    prefs = Preferences(settings, overlay, shortcuts=shortcuts)
    qtbot.addWidget(overlay)
    qtbot.addWidget(prefs)
    assert prefs.shortcuts_box is not None and prefs.shortcuts_box.note.text() == WAYLAND_NOTE
    assert factory.started == []


def test_on_macos_the_group_names_the_permission(qtbot) -> None:
    settings = Settings()
    shortcuts = GlobalShortcuts(
        settings.shortcuts, FakeHotkeyFactory(), platform_name="cocoa", environ={}, mac=True
    )
    box = ShortcutsBox(settings.shortcuts, shortcuts, mac=True)
    qtbot.addWidget(box)
    texts = [label.text() for label in box.findChildren(type(box.note))]
    assert MACOS_PERMISSION_HINT in texts
    assert "Accessibility and Input Monitoring" in MACOS_PERMISSION_HINT


def test_without_global_shortcuts_preferences_has_no_group(qtbot) -> None:
    settings = Settings()
    overlay = CaptionOverlay(settings.overlay)
    prefs = Preferences(settings, overlay)
    qtbot.addWidget(overlay)
    qtbot.addWidget(prefs)
    assert prefs.shortcuts_box is None
