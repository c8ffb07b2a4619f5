"""Qt key sequences -> pynput hotkeys: what converts, to what, and what is refused and why."""

from __future__ import annotations

import re

import pytest

from captionist.shortcut_keys import (
    DEFAULT_KEYS,
    ShortcutAction,
    find_clash,
    key_set,
    to_pynput,
    to_xdg_trigger,
)

CONVERTED = {
    "Ctrl+Alt+Shift+T": "<ctrl>+<alt>+<shift>+t",
    "ctrl+alt+shift+t": "<ctrl>+<alt>+<shift>+t",  # a hand-edited file: Qt's names in any case
    "Shift+Alt+Ctrl+T": "<ctrl>+<alt>+<shift>+t",  # pynput's order is fixed
    "Meta+Ctrl+Alt+Shift+F5": "<ctrl>+<alt>+<shift>+<cmd>+<f5>",
    "Ctrl+Alt+F20": "<ctrl>+<alt>+<f20>",
    "Alt+Shift+Space": "<alt>+<shift>+<space>",
    "Ctrl+Alt+PgDown": "<ctrl>+<alt>+<page_down>",
    "Ctrl+Alt+Return": "<ctrl>+<alt>+<enter>",
    "Ctrl+Alt+Del": "<ctrl>+<alt>+<delete>",
    "Ctrl+Alt+Ins": "<ctrl>+<alt>+<insert>",
    "Ctrl+Alt+Esc": "<ctrl>+<alt>+<esc>",
    "Ctrl+Alt+Left": "<ctrl>+<alt>+<left>",
    "Ctrl+Alt+Print": "<ctrl>+<alt>+<print_screen>",
    "Ctrl+Alt+7": "<ctrl>+<alt>+7",
    "Ctrl+,": "<ctrl>+,",
    "Ctrl++": "<ctrl>++",  # the plus key itself
    "Ctrl+Alt+Ä": "<ctrl>+<alt>+ä",
    " Ctrl+Alt+K ": "<ctrl>+<alt>+k",
}


@pytest.mark.parametrize("sequence", list(CONVERTED))
def test_qt_sequences_convert_to_pynput(sequence: str) -> None:
    assert to_pynput(sequence, mac=False) == CONVERTED[sequence]


def test_on_macos_qt_ctrl_is_command_and_meta_is_control() -> None:
    assert to_pynput("Ctrl+Alt+Shift+T", mac=True) == "<alt>+<shift>+<cmd>+t"
    assert to_pynput("Meta+Alt+T", mac=True) == "<ctrl>+<alt>+t"
    assert to_pynput("Meta+Ctrl+T", mac=True) == "<ctrl>+<cmd>+t"


REFUSED = {
    "": "no key sequence",
    "   ": "no key sequence",
    "Ctrl+A, Ctrl+B": "one key combination only",
    "Ctrl+A,Ctrl+B": "one key combination only",
    "T": "needs Ctrl, Alt or Meta",
    "F5": "needs Ctrl, Alt or Meta",
    "Shift+T": "needs Ctrl, Alt or Meta",
    "Ctrl+Alt+Banana": "'Banana' cannot be a global shortcut key",
    "Ctrl+Alt+Media Play": "cannot be a global shortcut key",
    "Ctrl+Alt+CapsLock": "cannot be a global shortcut key",  # a lock key changes its state
    "Ctrl+Num+5": "keypad keys",
    "Ctrl+Shift+1": "Shift changes what 1 types",
    "Ctrl+Alt+Shift+!": "Shift changes what ! types",
    "Ctrl+Ctrl+A": "Ctrl is there twice",
    "Control+Ctrl+A": "is there twice",
    "Hyper+A": "unknown modifier 'Hyper'",
    "Ctrl+": "a key is missing",
    "Ctrl+Alt+" + "F" * 70: "too long",
}


@pytest.mark.parametrize("sequence", list(REFUSED))
def test_what_a_global_shortcut_cannot_be_is_refused_with_a_reason(sequence: str) -> None:
    with pytest.raises(ValueError, match=re.escape(REFUSED[sequence])):
        to_pynput(sequence, mac=False)


@pytest.mark.parametrize("sequence", ["Ctrl+Alt+Ins", "Ctrl+Alt+Pause", "Ctrl+Alt+Print", "Ctrl+Alt+Menu"])
def test_keys_that_macos_lacks_are_refused_there(sequence: str) -> None:
    to_pynput(sequence, mac=False)
    with pytest.raises(ValueError, match="macOS has no"):
        to_pynput(sequence, mac=True)


def test_not_a_string_is_refused() -> None:
    with pytest.raises(ValueError, match="no key sequence"):
        to_pynput(None, mac=False)  # type: ignore[arg-type]


def test_the_defaults_convert_and_do_not_clash() -> None:
    for mac in (False, True):
        assert all(to_pynput(seq, mac=mac) for seq in DEFAULT_KEYS.values())
        assert find_clash(DEFAULT_KEYS, mac=mac) is None
    assert set(DEFAULT_KEYS) == set(ShortcutAction)


def test_the_same_keys_twice_clash_however_written() -> None:
    keys = {ShortcutAction.START_STOP: "Ctrl+Alt+K", ShortcutAction.SHOW_OVERLAY: "alt+ctrl+k"}
    assert (
        find_clash(keys, mac=False) == "Ctrl+Alt+K is used twice (Start/stop captions and Show/hide captions)"
    )


def test_keys_that_contain_another_shortcut_clash() -> None:
    """pynput fires every hotkey whose keys are all down: Ctrl+Alt+Shift+K would fire Ctrl+Alt+K too."""
    keys = {ShortcutAction.START_STOP: "Ctrl+Alt+Shift+K", ShortcutAction.CLICK_THROUGH: "Ctrl+Alt+K"}
    assert find_clash(keys, mac=False) == (
        "Ctrl+Alt+Shift+K (Start/stop captions) would also fire Ctrl+Alt+K (Click-through on/off)"
    )


def test_actions_without_a_shortcut_never_clash() -> None:
    keys = {
        ShortcutAction.START_STOP: "",
        ShortcutAction.SHOW_OVERLAY: "",
        ShortcutAction.CLICK_THROUGH: "Ctrl+Alt+K",
    }
    assert find_clash(keys, mac=False) is None


def test_key_set_is_what_must_be_down() -> None:
    assert key_set("Ctrl+Alt+Shift+T", mac=False) == {"<ctrl>", "<alt>", "<shift>", "t"}


def test_action_values_are_the_settings_fields_and_each_has_a_label() -> None:
    assert [a.value for a in ShortcutAction] == ["start_stop", "show_overlay", "click_through"]
    assert all(a.label for a in ShortcutAction)


@pytest.mark.parametrize(
    ("sequence", "trigger"),
    [
        ("Ctrl+Alt+Shift+T", "CTRL+ALT+SHIFT+t"),  # the portal's modifiers, then the X keysym name
        ("Meta+F9", "LOGO+F9"),  # Qt's Meta is the Super key on Linux
        ("Alt+Shift+PgDown", "ALT+SHIFT+Page_Down"),
        ("Ctrl+Alt+Return", "CTRL+ALT+Return"),
        ("Ctrl+Alt+/", "CTRL+ALT+slash"),
        ("Ctrl+Alt+5", "CTRL+ALT+5"),
        ("Ctrl+Alt+É", None),  # no name in our table: the desktop lets the user choose
    ],
)
def test_xdg_portal_triggers(sequence: str, trigger: str | None) -> None:
    assert to_xdg_trigger(sequence) == trigger


def test_xdg_portal_trigger_refuses_what_pynput_refuses() -> None:
    with pytest.raises(ValueError, match="needs Ctrl, Alt or Meta"):
        to_xdg_trigger("Shift+T")
