"""A private D-Bus session bus with a fake desktop portal that offers GlobalShortcuts, spoken to over the
real D-Bus protocol (a ``dbus-daemon`` of the test's own, and jeepney on both ends).

Usage::

    with PrivateBus() as bus:                       # dbus-daemon --session on a socket of its own
        with FakePortal(bus.address) as portal:     # owns org.freedesktop.portal.Desktop on it
            listener = start_portal_shortcuts(..., bus=bus.address)
            portal.wait_for(lambda: portal.bound)   # what BindShortcuts received
            portal.activate("start_stop")           # an Activated signal for the bound session

The fake answers as xdg-desktop-portal does: each call's reply is a Request path, its result comes as
that Request's ``Response`` signal, sent to the caller only. ``bind_response`` (0 ok, 1 declined, 2
failed), ``triggers`` (id -> trigger_description) and ``list_bound`` choose what BindShortcuts
answers. Everything the fake does happens on its own thread (a jeepney blocking connection is not
thread-safe); tests hand it work through a queue.
"""

from __future__ import annotations

import queue
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from typing import Any

from jeepney import DBusAddress, HeaderFields, MessageType, new_error, new_method_return, new_signal
from jeepney.bus_messages import message_bus
from jeepney.io.blocking import open_dbus_connection

from captionist.ui.portal_shortcuts import (
    PORTAL_NAME,
    PORTAL_PATH,
    REQUEST_INTERFACE,
    SESSION_INTERFACE,
    SHORTCUTS_INTERFACE,
)


class PrivateBus:
    def __init__(self) -> None:
        self.address = ""
        self._process: subprocess.Popen | None = None

    @staticmethod
    def available() -> bool:
        return shutil.which("dbus-daemon") is not None

    def __enter__(self) -> PrivateBus:
        self._process = subprocess.Popen(
            ["dbus-daemon", "--session", "--nofork", "--nopidfile", "--print-address=1"],
            stdout=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        assert self._process.stdout is not None
        self.address = self._process.stdout.readline().strip()
        assert self.address, "dbus-daemon printed no address"
        return self

    def __exit__(self, *exc: object) -> None:
        if self._process is not None:
            self._process.terminate()
            self._process.wait(timeout=10)


class FakePortal:
    def __init__(self, address: str, *, version: int = 1) -> None:
        self.address = address
        self.version = version
        self.bind_response = 0
        self.triggers: dict[str, str] = {}
        self.list_bound = True  # False: BindShortcuts' result lists no shortcuts (as some portals do)
        self.sessions: list[str] = []  # created, in order
        self.closed: list[str] = []  # sessions the app closed
        self.bound: list[tuple[str, list[tuple[str, dict[str, str]]]]] = []  # (session, [(id, info)])
        self.signals_sent = 0  # Activated and ShortcutsChanged signals sent so far
        self._work: queue.Queue[Callable[[Any], None]] = queue.Queue()
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fake-portal", daemon=True)
        self.errors: list[BaseException] = []

    def __enter__(self) -> FakePortal:
        self._thread.start()
        assert self._ready.wait(10), "the fake portal did not start"
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)
        assert not self.errors, self.errors

    def wait_for(self, condition: Callable[[], object], timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            assert time.monotonic() < deadline, "timed out waiting for the fake portal"
            time.sleep(0.01)

    def activate(self, shortcut_id: str, session: str | None = None) -> None:
        """Emit Activated for ``session`` (the last one bound, by default)."""
        self._work.put(
            lambda conn: self._emit(
                conn, "Activated", "osta{sv}", (self._session(session), shortcut_id, 1, {})
            )
        )

    def change_triggers(self, triggers: dict[str, str]) -> None:
        """Emit ShortcutsChanged: the user changed the keys in the desktop's settings."""
        items = [
            (key, {"description": ("s", key), "trigger_description": ("s", t)}) for key, t in triggers.items()
        ]
        self._work.put(
            lambda conn: self._emit(conn, "ShortcutsChanged", "oa(sa{sv})", (self._session(None), items))
        )

    def _session(self, session: str | None) -> str:
        return session if session is not None else self.bound[-1][0]

    def _emit(self, conn: Any, member: str, signature: str, body: tuple) -> None:
        conn.send(
            new_signal(DBusAddress(PORTAL_PATH, interface=SHORTCUTS_INTERFACE), member, signature, body)
        )
        self.signals_sent += 1

    # --- the fake's thread ---

    def _run(self) -> None:
        try:
            conn = open_dbus_connection(self.address)
            conn.send_and_get_reply(message_bus.RequestName(PORTAL_NAME), timeout=5)
            self._ready.set()
            while not self._stop.is_set():
                while not self._work.empty():
                    self._work.get()(conn)
                try:
                    message = conn.receive(timeout=0.02)
                except TimeoutError:
                    continue
                if message.header.message_type is MessageType.method_call:
                    self._answer(conn, message)
            conn.close()
        except BaseException as exc:  # reported by __exit__
            self.errors.append(exc)
            self._ready.set()

    def _answer(self, conn: Any, call: Any) -> None:
        fields = call.header.fields
        interface, member, sender = (
            fields.get(HeaderFields.interface),
            fields[HeaderFields.member],
            fields[HeaderFields.sender],
        )
        if interface == "org.freedesktop.DBus.Properties" and member == "Get":
            if tuple(call.body) == (SHORTCUTS_INTERFACE, "version"):
                conn.send(new_method_return(call, "v", (("u", self.version),)))
            else:
                conn.send(new_error(call, "org.freedesktop.DBus.Error.UnknownProperty"))
        elif interface == SHORTCUTS_INTERFACE and member == "CreateSession":
            (options,) = call.body
            token = options["handle_token"][1]
            session = f"{PORTAL_PATH}/session/{_sender_path(sender)}/{options['session_handle_token'][1]}"
            self.sessions.append(session)
            self._respond(conn, call, token, 0, {"session_handle": ("s", session)})
        elif interface == SHORTCUTS_INTERFACE and member == "BindShortcuts":
            session, shortcuts, _parent, options = call.body
            plain = [(key, {name: value[1] for name, value in info.items()}) for key, info in shortcuts]
            self.bound.append((session, plain))
            results = {
                "shortcuts": (
                    "a(sa{sv})",
                    [
                        (
                            key,
                            {
                                "description": ("s", info["description"]),
                                "trigger_description": ("s", self.triggers.get(key, "")),
                            },
                        )
                        for key, info in plain
                        if self.list_bound
                    ],
                )
            }
            self._respond(
                conn,
                call,
                options["handle_token"][1],
                self.bind_response,
                results if self.bind_response == 0 else {},
            )
        elif interface == SESSION_INTERFACE and member == "Close":
            self.closed.append(fields[HeaderFields.path])
            conn.send(new_method_return(call))
        else:
            conn.send(new_error(call, "org.freedesktop.DBus.Error.UnknownMethod"))

    def _respond(self, conn: Any, call: Any, token: str, response: int, results: dict) -> None:
        sender = call.header.fields[HeaderFields.sender]
        handle = f"{PORTAL_PATH}/request/{_sender_path(sender)}/{token}"
        conn.send(new_method_return(call, "o", (handle,)))
        signal = new_signal(
            DBusAddress(handle, interface=REQUEST_INTERFACE), "Response", "ua{sv}", (response, results)
        )
        signal.header.fields[HeaderFields.destination] = sender  # as the portal does: to the caller only
        conn.send(signal)


def _sender_path(unique_name: str) -> str:
    return unique_name.lstrip(":").replace(".", "_")
