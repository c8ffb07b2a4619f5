"""Global (system-wide) shortcuts: a keyboard listener for the configured keys, reported in the GUI thread.

Usage::

    shortcuts = GlobalShortcuts(settings.shortcuts, start_pynput_hotkeys, start_portal=start_portal_shortcuts)
    shortcuts.triggered.connect(lambda action: ...)   # a ShortcutAction, always in the GUI thread
    shortcuts.apply()           # (re)start with the current settings; again after every change
    shortcuts.state, shortcuts.note()                # ShortcutState and one sentence for Preferences
    shortcuts.active_keys()     # {ShortcutAction: "Ctrl+Alt+Shift+T"} while listening
    shortcuts.stop()            # at exit

The listener factory takes {pynput hotkey: callback} and returns something with ``stop()``, or raises
``ShortcutsUnavailable`` with a sentence saying why (no pynput, no X display, macOS permission).
Callbacks run on the listener's own thread: they only emit ``_fired``, a signal of this QObject (which
lives in the GUI thread), so Qt queues the call to ``_deliver`` there. A press from a listener that
has since been stopped (queued just before a restart) is dropped. Nothing here can stop the app:
where shortcuts cannot run they are off and ``note()`` says why; the tray menu always works.

Wayland: X11 listeners (pynput's RECORD backend) do not see native Wayland apps' keys, so on a
Wayland session the keys are asked of the desktop instead, through its GlobalShortcuts portal
(``start_portal``, see ``portal_shortcuts``): the state is PENDING until the desktop answers (it may
ask the user first), then ACTIVE with the keys the desktop chose, which ``active_keys()`` and the
note show as the desktop describes them. Without a portal the shortcuts are off, and the note says
why, rather than half working.
"""

from __future__ import annotations

import enum
import os
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Protocol

from PySide6.QtCore import QObject, Signal, Slot
from PySide6.QtGui import QGuiApplication

from captionist.pipeline.signals import emit
from captionist.settings import ShortcutSettings
from captionist.shortcut_keys import ShortcutAction, find_clash, to_pynput, to_xdg_trigger

if TYPE_CHECKING:  # portal_shortcuts imports ShortcutsUnavailable from here
    from captionist.ui.portal_shortcuts import PortalBinding, PortalShortcut


class ShortcutsUnavailable(Exception):
    """The listener cannot run on this system; ``str()`` is one sentence for Preferences."""


class HotkeyListener(Protocol):
    def stop(self) -> None: ...


# {pynput hotkey ("<ctrl>+<alt>+t"): callback run on the listener's thread} -> a started listener.
ListenerFactory = Callable[[Mapping[str, Callable[[], None]]], HotkeyListener]
# ({id: PortalShortcut}, on_activated(id), on_binding(PortalBinding)) -> a started portal session.
PortalFactory = Callable[
    [Mapping[str, "PortalShortcut"], Callable[[str], None], Callable[["PortalBinding"], None]], HotkeyListener
]


class ShortcutState(enum.Enum):
    ACTIVE = "active"  # listening for at least one shortcut
    PENDING = "pending"  # asked the desktop's portal (Wayland), which has not answered yet
    OFF = "off"  # turned off in Preferences, or no action has a shortcut
    UNAVAILABLE = "unavailable"  # this system cannot run the listener (Wayland, no pynput, permission)
    REFUSED = "refused"  # the keys cannot be used (a clash); the other settings are unaffected


WAYLAND_NOTE = "Global shortcuts need the desktop's shortcuts portal on Wayland; use the tray menu."
ACTIVE_NOTE = "Global shortcuts work while any app has focus (that app still receives the keys too)."
PORTAL_PENDING_NOTE = "Asking the desktop for the global shortcuts (it may show a dialog)…"
PORTAL_DECLINED_NOTE = (
    "The desktop's dialog declined the global shortcuts; turn them off and on again to be asked again."
)


def wayland_session(platform_name: str, environ: Mapping[str, str]) -> bool:
    """Whether the desktop is Wayland, where an X11 listener would miss native Wayland apps' keys: Qt
    runs on Wayland, or there is a Wayland display and no X one, or the login session says Wayland
    (Captionist itself may run under XWayland there, but most apps do not)."""
    if platform_name == "wayland" or environ.get("XDG_SESSION_TYPE", "").lower() == "wayland":
        return True
    return bool(environ.get("WAYLAND_DISPLAY")) and not environ.get("DISPLAY")


class GlobalShortcuts(QObject):
    triggered = Signal(object)  # ShortcutAction; emitted in the GUI thread
    state_changed = Signal()  # state, note() or active_keys() changed
    _fired = Signal(int, object)  # (listener generation, ShortcutAction), emitted on the listener's thread
    _bound = Signal(int, object)  # (listener generation, PortalBinding), emitted on the portal's thread

    def __init__(
        self,
        settings: ShortcutSettings,
        start_listener: ListenerFactory,
        *,
        platform_name: str | None = None,
        environ: Mapping[str, str] | None = None,
        mac: bool = sys.platform == "darwin",
        start_portal: PortalFactory | None = None,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.settings = settings
        self._start_listener = start_listener
        self._start_portal = start_portal
        self._requested: dict[ShortcutAction, str] = {}  # what the portal was asked for
        self._platform_name = platform_name
        self._environ = environ if environ is not None else os.environ
        self._mac = mac
        self._listener: HotkeyListener | None = None
        self._generation = 0
        self._active: dict[ShortcutAction, str] = {}
        self.state = ShortcutState.OFF
        self._note = ""
        self._fired.connect(self._deliver)  # a slot of this GUI-thread object: queued from other threads
        self._bound.connect(self._on_binding)

    def apply(self) -> None:
        """Stop the running listener and start one for the current settings (or say why not)."""
        self._stop_listener()
        self._generation += 1
        self._active = {}
        state, note = self._start()
        self.state, self._note = state, note
        emit(self.state_changed)

    def _start(self) -> tuple[ShortcutState, str]:
        if not self.settings.enabled:
            return ShortcutState.OFF, "Global shortcuts are off."
        platform = self._platform_name if self._platform_name is not None else QGuiApplication.platformName()
        wayland = wayland_session(platform, self._environ)
        if wayland and self._start_portal is None:
            return ShortcutState.UNAVAILABLE, WAYLAND_NOTE
        keys = {action: seq for action, seq in self.settings.keys().items() if seq}
        if not keys:
            return ShortcutState.OFF, "No action has a global shortcut."
        try:
            clash = find_clash(keys, mac=self._mac)  # also checks that each sequence converts
        except ValueError as exc:  # settings.py validates, so only a hand-made ShortcutSettings gets here
            return ShortcutState.REFUSED, f"Global shortcuts are off: {exc}."
        if clash:
            return ShortcutState.REFUSED, f"Global shortcuts are off: {clash}."
        if wayland:
            return self._ask_portal(keys)
        hotkeys = {to_pynput(seq, mac=self._mac): self._callback(action) for action, seq in keys.items()}
        try:
            self._listener = self._start_listener(hotkeys)
        except ShortcutsUnavailable as exc:
            return ShortcutState.UNAVAILABLE, str(exc)
        except Exception as exc:  # the listener's own failure: report, never crash
            return ShortcutState.UNAVAILABLE, f"Global shortcuts could not start ({exc}); use the tray menu."
        self._active = keys
        return ShortcutState.ACTIVE, ACTIVE_NOTE

    def _ask_portal(self, keys: dict[ShortcutAction, str]) -> tuple[ShortcutState, str]:
        from captionist.ui.portal_shortcuts import PortalShortcut

        assert self._start_portal is not None
        shortcuts = {
            action.value: PortalShortcut(action.label, to_xdg_trigger(seq)) for action, seq in keys.items()
        }
        generation = self._generation
        try:
            self._listener = self._start_portal(
                shortcuts,
                lambda shortcut_id: emit(self._fired, generation, ShortcutAction(shortcut_id)),
                lambda binding: emit(self._bound, generation, binding),
            )
        except ShortcutsUnavailable as exc:
            return ShortcutState.UNAVAILABLE, str(exc)
        except Exception as exc:  # the portal client's own failure: report, never crash
            return ShortcutState.UNAVAILABLE, f"Global shortcuts could not start ({exc}); use the tray menu."
        self._requested = keys
        return ShortcutState.PENDING, PORTAL_PENDING_NOTE

    @Slot(int, object)
    def _on_binding(self, generation: int, binding: PortalBinding) -> None:
        """The desktop answered (or changed its keys, or broke): the state and note say what holds now."""
        from captionist.ui.portal_shortcuts import BindOutcome

        if generation != self._generation or self._listener is None:
            return  # an answer to a session since stopped
        if binding.outcome is BindOutcome.BOUND:
            # A portal that lists nothing bound everything it was asked for, with the suggested keys.
            taken = binding.triggers or dict.fromkeys((action.value for action in self._requested), "")
            self._active = {
                action: taken[action.value] or seq
                for action, seq in self._requested.items()
                if action.value in taken
            }
            self.state = ShortcutState.ACTIVE
            bound = "; ".join(f"{action.label}: {keys}" for action, keys in self._active.items())
            self._note = f"Global shortcuts work through the desktop ({bound or 'none bound'}); " + (
                "change their keys in the desktop's settings."
            )
        else:
            self._stop_listener()
            self._active = {}
            self.state = ShortcutState.UNAVAILABLE
            self._note = (
                PORTAL_DECLINED_NOTE
                if binding.outcome is BindOutcome.DECLINED
                else f"The desktop could not bind the global shortcuts ({binding.detail}); use the tray menu."
            )
        emit(self.state_changed)

    def _callback(self, action: ShortcutAction) -> Callable[[], None]:
        generation = self._generation
        return lambda: emit(self._fired, generation, action)  # on the listener's thread: only emit

    @Slot(int, object)
    def _deliver(self, generation: int, action: ShortcutAction) -> None:
        if generation == self._generation and self._listener is not None:
            emit(self.triggered, action)

    def note(self) -> str:
        """One sentence on the state: what works, or why shortcuts are off."""
        return self._note

    def active_keys(self) -> dict[ShortcutAction, str]:
        """The shortcuts being listened for now (empty unless ACTIVE): Qt's portable text, or through
        the portal the desktop's own description of its keys ("Ctrl+Alt+Shift+S", "Super+F9")."""
        return dict(self._active)

    def stop(self) -> None:
        """Stop listening (at exit); ``apply()`` starts again."""
        self._stop_listener()
        self._generation += 1
        self._active = {}
        self.state, self._note = ShortcutState.OFF, "Global shortcuts are off."
        emit(self.state_changed)

    def _stop_listener(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            try:
                listener.stop()
            except Exception:  # a listener that fails to stop is gone anyway
                pass
