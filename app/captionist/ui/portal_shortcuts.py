"""Global shortcuts on Wayland: the XDG desktop portal's ``org.freedesktop.portal.GlobalShortcuts``.

Usage::

    listener = start_portal_shortcuts(
        {"start_stop": PortalShortcut("Start/stop captions", "CTRL+ALT+SHIFT+s")},
        on_activated=lambda shortcut_id: ...,   # on the listener's thread
        on_binding=lambda binding: ...,         # a PortalBinding, on the listener's thread
    )
    listener.stop()

On Wayland no app can see another app's keys; the desktop owns the keyboard, and the portal (the
D-Bus service that desktops provide for sandboxed and ordinary apps alike) lets an app ask for
shortcuts: the app names each one and suggests a trigger, the desktop decides (GNOME and KDE may ask
the user in a dialog, or let them change the keys later in their settings) and reports each press
as an ``Activated`` signal. The conversation, each step awaited on the listener's own thread:

1. ``CreateSession`` -> a ``Request`` object whose ``Response`` signal carries the session handle;
2. ``BindShortcuts(session, [(id, {description, preferred_trigger})], "", {})`` -> a ``Response``
   with the triggers the desktop chose (``trigger_description``), or a refusal (response 1: the user
   declined; 2: the desktop failed);
3. ``Activated(session, id, timestamp, options)`` for each press, ``ShortcutsChanged`` when the user
   changes a trigger, until ``stop()``, which closes the session.

The portal's request paths are predictable (``.../request/<sender>/<handle_token>``), but older
portals returned other paths, so a ``Response`` is matched against the path each call returns.

D-Bus through ``jeepney`` (pure Python, no GLib main loop: the blocking connection belongs to this
listener's thread alone). ``start_portal_shortcuts`` raises ``ShortcutsUnavailable`` at once, with one
sentence for Preferences, where there is no session bus or the desktop's portal has no
GlobalShortcuts; anything that goes wrong later arrives as a FAILED ``PortalBinding``.
"""

from __future__ import annotations

import enum
import secrets
import threading
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from captionist.ui.global_shortcuts import ShortcutsUnavailable

PORTAL_NAME = "org.freedesktop.portal.Desktop"
PORTAL_PATH = "/org/freedesktop/portal/desktop"
SHORTCUTS_INTERFACE = "org.freedesktop.portal.GlobalShortcuts"
REQUEST_INTERFACE = "org.freedesktop.portal.Request"
SESSION_INTERFACE = "org.freedesktop.portal.Session"

CALL_TIMEOUT_S = 5.0  # a method's reply (not the user's answer to a dialog, which may take any time)
POLL_S = 0.2  # how often the listener's thread looks whether it should stop
NO_BUS_NOTE = "Global shortcuts need the desktop's session bus (D-Bus), and there is none; use the tray menu."
NO_PORTAL_NOTE = (
    "This Wayland desktop offers no global shortcuts to apps (no GlobalShortcuts portal); use the tray menu."
)
NO_JEEPNEY_NOTE = "Global shortcuts on Wayland need the Python package jeepney; use the tray menu."


@dataclass(frozen=True)
class PortalShortcut:
    description: str  # what the desktop shows the user ("Start/stop captions")
    preferred_trigger: str | None  # "CTRL+ALT+SHIFT+s" (``shortcut_keys.to_xdg_trigger``), or None


class BindOutcome(enum.Enum):
    BOUND = "bound"  # the desktop took the shortcuts (``triggers`` says which keys)
    DECLINED = "declined"  # the user said no in the desktop's dialog
    FAILED = "failed"  # the portal refused or broke (``detail`` says how)


@dataclass(frozen=True)
class PortalBinding:
    outcome: BindOutcome
    triggers: dict[str, str] = field(default_factory=dict)  # shortcut id -> the desktop's "Ctrl+Alt+S"
    detail: str = ""


class _Stopped(Exception):
    """``stop()`` was called while the thread waited."""


def _dbus() -> Any:
    try:
        import jeepney
        import jeepney.io.blocking
    except ImportError as exc:
        raise ShortcutsUnavailable(NO_JEEPNEY_NOTE) from exc
    return jeepney


def start_portal_shortcuts(
    shortcuts: Mapping[str, PortalShortcut],
    on_activated: Callable[[str], None],
    on_binding: Callable[[PortalBinding], None],
    *,
    bus: str = "SESSION",
) -> PortalShortcuts:
    """Check that the portal is there (a property read, milliseconds), then bind ``shortcuts`` on a
    thread of the listener's own. ``bus``: "SESSION" or a D-Bus address (tests run a bus of their own).
    Raises ShortcutsUnavailable where shortcuts cannot work here."""
    jeepney = _dbus()
    try:
        connection = jeepney.io.blocking.open_dbus_connection(bus)
    except Exception as exc:  # no DBUS_SESSION_BUS_ADDRESS, a dead socket, an authentication failure
        raise ShortcutsUnavailable(NO_BUS_NOTE) from exc
    try:
        reply = connection.send_and_get_reply(
            jeepney.Properties(_portal(jeepney)).get("version"), timeout=CALL_TIMEOUT_S
        )
        if reply.header.message_type is not jeepney.MessageType.method_return:
            raise ShortcutsUnavailable(NO_PORTAL_NOTE)  # no portal, or one without GlobalShortcuts
    except ShortcutsUnavailable:
        connection.close()
        raise
    except Exception as exc:  # a timeout, a broken connection
        connection.close()
        raise ShortcutsUnavailable(NO_PORTAL_NOTE) from exc
    listener = PortalShortcuts(connection, dict(shortcuts), on_activated, on_binding)
    listener.start()
    return listener


class PortalShortcuts:
    """One portal session: created, bound and listened to on its own thread until ``stop()``."""

    def __init__(
        self,
        connection: Any,
        shortcuts: dict[str, PortalShortcut],
        on_activated: Callable[[str], None],
        on_binding: Callable[[PortalBinding], None],
    ) -> None:
        self._jeepney = _dbus()
        self._connection = connection
        self._shortcuts = shortcuts
        self._on_activated = on_activated
        self._on_binding = on_binding
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="captionist-portal-shortcuts", daemon=True)
        self._sender = connection.unique_name.lstrip(":").replace(".", "_")

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """End the session (the desktop forgets the shortcuts); returns within about ``POLL_S``."""
        self._stopping.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=CALL_TIMEOUT_S)

    # --- the listener's thread ---

    def _run(self) -> None:
        session: str | None = None
        jeepney = self._jeepney
        rule = jeepney.MatchRule(type="signal", interface=SHORTCUTS_INTERFACE, path=PORTAL_PATH)
        try:
            with self._connection.filter(rule, queue=deque()) as signals:
                # subscribed before the binding is announced, so no press after it can be missed
                self._add_match(rule)
                session = self._create_session()
                binding = self._bind(session)
                self._on_binding(binding)
                if binding.outcome is BindOutcome.BOUND:
                    self._listen(session, signals)
        except _Stopped:
            pass
        except Exception as exc:  # a portal that breaks the protocol, a bus that goes away
            if not self._stopping.is_set():
                self._on_binding(PortalBinding(BindOutcome.FAILED, detail=str(exc) or type(exc).__name__))
        finally:
            self._close(session)

    def _create_session(self) -> str:
        token = self._token()
        results = self._request(
            "CreateSession", "a{sv}", ({"handle_token": ("s", token), "session_handle_token": ("s", token)},)
        )
        session = _unvariant(results.get("session_handle"))
        if not isinstance(session, str) or not session.startswith("/"):
            raise RuntimeError("the portal created no session")
        return session

    def _bind(self, session: str) -> PortalBinding:
        shortcuts = []
        for shortcut_id, shortcut in self._shortcuts.items():
            info: dict[str, tuple[str, str]] = {"description": ("s", shortcut.description)}
            if shortcut.preferred_trigger:
                info["preferred_trigger"] = ("s", shortcut.preferred_trigger)
            shortcuts.append((shortcut_id, info))
        options = {"handle_token": ("s", self._token())}
        try:
            results = self._request("BindShortcuts", "oa(sa{sv})sa{sv}", (session, shortcuts, "", options))
        except _Refused as refused:
            if refused.response == 1:
                return PortalBinding(BindOutcome.DECLINED)
            return PortalBinding(BindOutcome.FAILED, detail="the desktop did not bind the shortcuts")
        return PortalBinding(BindOutcome.BOUND, _triggers(results.get("shortcuts")))

    def _listen(self, session: str, signals: deque) -> None:
        jeepney = self._jeepney
        while True:
            message = self._next(signals)
            body = message.body
            if not body or body[0] != session:
                continue  # another session's (another app's, or ours from before a restart)
            member = message.header.fields.get(jeepney.HeaderFields.member)
            if member == "Activated" and len(body) > 1 and body[1] in self._shortcuts:
                self._on_activated(body[1])
            elif member == "ShortcutsChanged" and len(body) > 1:
                self._on_binding(PortalBinding(BindOutcome.BOUND, _triggers(body[1])))

    def _request(self, method: str, signature: str, body: tuple) -> dict[str, Any]:
        """Call a portal method that answers with a ``Request``, and wait for its ``Response``."""
        jeepney = self._jeepney
        rule = jeepney.MatchRule(type="signal", interface=REQUEST_INTERFACE, member="Response")
        with self._connection.filter(rule, queue=deque()) as queue:
            self._add_match(rule)  # before the call: the Response may follow its reply at once
            reply = self._call(jeepney.new_method_call(_portal(jeepney), method, signature, body))
            handle = reply.body[0]
            while True:
                message = self._next(queue)
                if message.header.fields.get(jeepney.HeaderFields.path) != handle:
                    continue
                response, results = message.body
                if response != 0:
                    raise _Refused(response)
                return dict(results)

    def _call(self, message: Any) -> Any:
        jeepney = self._jeepney
        reply = self._connection.send_and_get_reply(message, timeout=CALL_TIMEOUT_S)
        if reply.header.message_type is jeepney.MessageType.error:
            name = reply.header.fields.get(jeepney.HeaderFields.error_name, "an error")
            raise RuntimeError(f"the portal answered {name}" + (f": {reply.body[0]}" if reply.body else ""))
        return reply

    def _add_match(self, rule: Any) -> None:
        self._call(self._jeepney.message_bus.AddMatch(rule))

    def _next(self, queue: deque) -> Any:
        while True:
            if self._stopping.is_set():
                raise _Stopped
            try:
                return self._connection.recv_until_filtered(queue, timeout=POLL_S)
            except TimeoutError:
                continue

    def _close(self, session: str | None) -> None:
        try:
            if session is not None:
                address = self._jeepney.DBusAddress(
                    session, bus_name=PORTAL_NAME, interface=SESSION_INTERFACE
                )
                self._connection.send(self._jeepney.new_method_call(address, "Close"))
        except Exception:  # the bus is gone: so is the session
            pass
        finally:
            self._connection.close()

    def _token(self) -> str:
        return "captionist_" + secrets.token_hex(6)


class _Refused(Exception):
    def __init__(self, response: int) -> None:
        super().__init__(f"response {response}")
        self.response = response


def _portal(jeepney: Any) -> Any:
    """The portal's GlobalShortcuts interface, as a jeepney address."""
    return jeepney.DBusAddress(PORTAL_PATH, bus_name=PORTAL_NAME, interface=SHORTCUTS_INTERFACE)


def _unvariant(value: Any) -> Any:
    """jeepney gives a variant as (signature, value)."""
    return value[1] if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str) else value


def _triggers(shortcuts: Any) -> dict[str, str]:
    """The portal's a(sa{sv}) of bound shortcuts -> {id: trigger_description} ("" where none is given)."""
    triggers: dict[str, str] = {}
    for item in _unvariant(shortcuts) or []:
        try:
            shortcut_id, info = item
            description = _unvariant(dict(info).get("trigger_description", ("s", "")))
        except (TypeError, ValueError):
            continue
        if isinstance(shortcut_id, str):
            triggers[shortcut_id] = description if isinstance(description, str) else ""
    return triggers
