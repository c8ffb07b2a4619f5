"""Global shortcuts' actions and keys: what each does, its default, and Qt key sequence -> pynput hotkey.

Usage::

    from captionist.shortcut_keys import DEFAULT_KEYS, ShortcutAction, find_clash, to_pynput
    to_pynput("Ctrl+Alt+Shift+T")              # "<ctrl>+<alt>+<shift>+t"
    to_pynput("Ctrl+Alt+Shift+T", mac=True)    # "<cmd>+<alt>+<shift>+t" (Qt's Ctrl is the Command key)
    to_pynput("Ctrl+A, Ctrl+B")                # ValueError: one combination only
    to_xdg_trigger("Ctrl+Alt+Shift+T")         # "CTRL+ALT+SHIFT+t" (the desktop portal's format)
    find_clash({ShortcutAction.START_STOP: "Ctrl+Alt+T", ShortcutAction.CLICK_THROUGH: "Ctrl+Alt+T"})

Sequences are Qt's portable text (``QKeySequence.toString(PortableText)``: modifiers ``Ctrl``, ``Alt``,
``Shift``, ``Meta``, then one key), as Preferences records them and settings.json stores them; "" means
the action has no shortcut. pynput's ``GlobalHotKeys`` fires a hotkey when all of its keys are down,
whatever else is down, so a global shortcut needs Ctrl, Alt or Meta (a plain key would fire while
typing), and two actions clash when one's keys contain the other's (pressing the longer one would
fire both). Pure Python, no Qt: settings.py validates stored sequences with it.
"""

from __future__ import annotations

import enum
import sys
from collections.abc import Mapping


class ShortcutAction(enum.Enum):
    """What a global shortcut does; the value is its field in ``settings.ShortcutSettings``."""

    START_STOP = "start_stop"  # as the main window's Start/Stop button
    SHOW_OVERLAY = "show_overlay"  # show or hide the caption overlay
    CLICK_THROUGH = "click_through"  # overlay click-through on or off

    @property
    def label(self) -> str:
        return _LABELS[self]


_LABELS = {
    ShortcutAction.START_STOP: "Start/stop captions",
    ShortcutAction.SHOW_OVERLAY: "Show/hide captions",
    ShortcutAction.CLICK_THROUGH: "Click-through on/off",
}

# Three modifiers, so no common app's shortcut is taken by default (pynput does not swallow keys: the
# focused app still receives them). On macOS Qt's "Ctrl" is the Command key.
DEFAULT_KEYS: dict[ShortcutAction, str] = {
    ShortcutAction.START_STOP: "Ctrl+Alt+Shift+S",
    ShortcutAction.SHOW_OVERLAY: "Ctrl+Alt+Shift+O",
    ShortcutAction.CLICK_THROUGH: "Ctrl+Alt+Shift+T",
}

MAX_SEQUENCE_CHARS = 64

# Qt modifier name (lower case) -> pynput modifier, elsewhere and on macOS (where Qt swaps Ctrl and Meta:
# "Ctrl" is Command, "Meta" is Control).
_MODIFIERS = {"ctrl": "ctrl", "control": "ctrl", "alt": "alt", "shift": "shift", "meta": "cmd"}
_MAC_MODIFIERS = {**_MODIFIERS, "ctrl": "cmd", "control": "cmd", "meta": "ctrl"}
_MODIFIER_ORDER = ("ctrl", "alt", "shift", "cmd")

# Qt key name (lower case) -> pynput ``Key`` name. Lock keys are left out: pressing one changes its state.
_NAMED_KEYS = {
    "space": "space",
    "tab": "tab",
    "return": "enter",
    "enter": "enter",
    "esc": "esc",
    "escape": "esc",
    "backspace": "backspace",
    "del": "delete",
    "delete": "delete",
    "ins": "insert",
    "insert": "insert",
    "home": "home",
    "end": "end",
    "pgup": "page_up",
    "pgdown": "page_down",
    "left": "left",
    "right": "right",
    "up": "up",
    "down": "down",
    "pause": "pause",
    "print": "print_screen",
    "menu": "menu",
    **{f"f{n}": f"f{n}" for n in range(1, 21)},  # pynput knows F1-F20 on every platform
}
_NOT_ON_MAC = {"insert", "pause", "print_screen", "menu"}  # pynput's macOS Key has no such keys


def _split(sequence: str) -> tuple[list[str], str]:
    """ "Ctrl+Alt+T" -> (["Ctrl", "Alt"], "T"); the key may itself be "+" ("Ctrl++")."""
    if sequence == "+" or sequence.endswith("++"):
        head, key = sequence[:-2], "+"
    else:
        head, _, key = sequence.rpartition("+")
    return ([m.strip() for m in head.split("+")] if head else []), key.strip()


def key_tokens(sequence: str, *, mac: bool = sys.platform == "darwin") -> tuple[list[str], str]:
    """The pynput modifiers (in a fixed order) and key of ``sequence``.

    Raises ValueError, with a message that names the sequence, for what a global shortcut cannot be:
    empty, several combinations, no Ctrl/Alt/Meta, an unknown or keypad key, Shift with a digit or
    symbol (Shift changes which character such a key types, and so what pynput reports)."""
    text = sequence.strip() if isinstance(sequence, str) else ""
    if not text:
        raise ValueError("no key sequence (press the keys to record one)")
    if len(text) > MAX_SEQUENCE_CHARS:
        raise ValueError(f"key sequence too long ({len(text)} characters)")
    if "," in text[:-1]:
        raise ValueError(f"{text}: one key combination only, not several in a row")
    names, key = _split(text)
    table = _MAC_MODIFIERS if mac else _MODIFIERS
    modifiers: set[str] = set()
    for name in names:
        lowered = name.lower()
        if lowered == "num":
            raise ValueError(f"{text}: keypad keys cannot be global shortcuts")
        if lowered not in table:
            raise ValueError(f"{text}: unknown modifier {name!r} (Ctrl, Alt, Shift or Meta)")
        if table[lowered] in modifiers:
            raise ValueError(f"{text}: {name} is there twice")
        modifiers.add(table[lowered])
    if not key:
        raise ValueError(f"{text}: a key is missing after the modifiers")
    if not modifiers - {"shift"}:
        raise ValueError(f"{text}: needs Ctrl, Alt or Meta too, or it would fire while you type")
    named = _NAMED_KEYS.get(key.lower())
    if named is not None:
        if mac and named in _NOT_ON_MAC:
            raise ValueError(f"{text}: macOS has no {key} key")
        token = f"<{named}>"
    elif len(key) == 1 and key.isprintable() and not key.isspace():
        if "shift" in modifiers and key.lower() == key.upper():
            raise ValueError(f"{text}: Shift changes what {key} types; use a letter or F1, arrows…")
        token = key.lower()
    else:
        raise ValueError(f"{text}: {key!r} cannot be a global shortcut key")
    return [f"<{m}>" for m in _MODIFIER_ORDER if m in modifiers], token


def to_pynput(sequence: str, *, mac: bool = sys.platform == "darwin") -> str:
    """Qt portable text ("Ctrl+Alt+Shift+T") -> pynput hotkey ("<ctrl>+<alt>+<shift>+t").

    ``mac``: Qt's Ctrl is the Command key and Meta the Control key there. Raises ValueError as
    ``key_tokens`` does."""
    modifiers, key = key_tokens(sequence, mac=mac)
    return "+".join([*modifiers, key])


def key_set(sequence: str, *, mac: bool = sys.platform == "darwin") -> frozenset[str]:
    """The pynput keys that must be down for ``sequence`` to fire (ValueError as ``key_tokens``)."""
    modifiers, key = key_tokens(sequence, mac=mac)
    return frozenset([*modifiers, key])


def find_clash(keys: Mapping[ShortcutAction, str], *, mac: bool = sys.platform == "darwin") -> str | None:
    """Why these shortcuts cannot all be used at once (one sentence), or None.

    Actions without a shortcut ("") are skipped. Raises ValueError for a sequence ``to_pynput``
    refuses."""
    bound = [(action, sequence, key_set(sequence, mac=mac)) for action, sequence in keys.items() if sequence]
    for i, (a, seq_a, set_a) in enumerate(bound):
        for b, seq_b, set_b in bound[i + 1 :]:
            if set_a == set_b:
                return f"{seq_a} is used twice ({a.label} and {b.label})"
            if set_a < set_b:
                return f"{seq_b} ({b.label}) would also fire {seq_a} ({a.label})"
            if set_b < set_a:
                return f"{seq_a} ({a.label}) would also fire {seq_b} ({b.label})"
    return None


# pynput key -> X keysym name, for the desktop portal's triggers (the XDG "shortcuts" specification:
# modifiers CTRL, ALT, SHIFT, LOGO, then a keysym name, joined with "+").
_XDG_MODIFIERS = {"<ctrl>": "CTRL", "<alt>": "ALT", "<shift>": "SHIFT", "<cmd>": "LOGO"}
_XDG_NAMED_KEYS = {
    "space": "space",
    "tab": "Tab",
    "enter": "Return",
    "esc": "Escape",
    "backspace": "BackSpace",
    "delete": "Delete",
    "insert": "Insert",
    "home": "Home",
    "end": "End",
    "page_up": "Page_Up",
    "page_down": "Page_Down",
    "left": "Left",
    "right": "Right",
    "up": "Up",
    "down": "Down",
    "pause": "Pause",
    "print_screen": "Print",
    "menu": "Menu",
    **{f"f{n}": f"F{n}" for n in range(1, 21)},
}
_XDG_SYMBOLS = {
    "-": "minus", "=": "equal", ",": "comma", ".": "period", "/": "slash", ";": "semicolon",
    "'": "apostrophe", "[": "bracketleft", "]": "bracketright", "\\": "backslash", "`": "grave",
}  # fmt: skip


def to_xdg_trigger(sequence: str) -> str | None:
    """Qt portable text -> the desktop portal's trigger ("Ctrl+Alt+Shift+T" -> "CTRL+ALT+SHIFT+t"), or
    None for a key the table does not name (the desktop then lets the user choose). Linux only: Qt's
    Meta is the Super key there (LOGO). Raises ValueError as ``key_tokens`` does."""
    modifiers, key = key_tokens(sequence, mac=False)
    if key.startswith("<"):
        name = _XDG_NAMED_KEYS.get(key[1:-1])
    elif key.isascii() and key.isalnum():
        name = key
    else:
        name = _XDG_SYMBOLS.get(key)
    if name is None:
        return None
    return "+".join([*(_XDG_MODIFIERS[m] for m in modifiers), name])
