"""A private X11 desktop for end-to-end tests: Xvfb, the openbox window manager, and another app's
window (xev, which prints every key it receives) focused, as a user's call window would be.

    desktop = X11Desktop.start()          # X11Unavailable if a tool is missing or does not come up
    desktop.display                       # ":N", for $DISPLAY
    desktop.activate_target()             # the other app has the focus, settled
    desktop.active_window_name()          # "captionist-e2e-target"
    desktop.key("ctrl+alt+shift+t")       # xdotool: as if typed on the keyboard (XTEST)
    desktop.wait_for_key_press("t")       # the focused app received it too (not swallowed)
    desktop.close()

Every wait is for an event (Xvfb writes its display number when ready, openbox sets
``_NET_SUPPORTING_WM_CHECK`` on the root window and answers ``_NET_REQUEST_FRAME_EXTENTS`` pings,
``_NET_CLIENT_LIST`` and ``_NET_ACTIVE_WINDOW`` change, xev prints each key event); the timeouts only
bound a broken tool. Two races of openbox's are waited out that way:

- it sets ``_NET_SUPPORTING_WM_CHECK`` early in its start and drops what it is sent before it goes on
  to handle events, so a window mapped then stayed unmapped and unmanaged: the other app starts only
  once openbox has answered a ping (re-sent until one is answered);
- while it moves the focus it says in between that no window is active (``_NET_ACTIVE_WINDOW`` 0),
  and asking again for the window that has the focus moves it: ``xdotool getactivewindow`` read that
  0 under load, right after ``windowactivate --sync``. The focus is asked for only when the other
  app lacks it, and read once pings show openbox has handled every focus change.
"""

from __future__ import annotations

import os
import queue
import select
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

TOOLS = ("Xvfb", "openbox", "xdotool", "xev")
TARGET = "captionist-e2e-target"  # the other app's window title
START_TIMEOUT_S = 30.0
PING_RESEND_S = 0.05  # while openbox starts it drops what it is sent


class X11Unavailable(Exception):
    pass


@dataclass
class X11Desktop:
    display: str
    processes: list[subprocess.Popen[str]]
    events: queue.Queue[str] = field(default_factory=queue.Queue)  # xev's output lines

    @classmethod
    def start(cls) -> X11Desktop:
        missing = [tool for tool in TOOLS if shutil.which(tool) is None]
        if missing:
            raise X11Unavailable(f"{', '.join(missing)} not installed")
        read_fd, write_fd = os.pipe()
        xvfb = subprocess.Popen(
            ["Xvfb", "-displayfd", str(write_fd), "-screen", "0", "1024x768x24", "-nolisten", "tcp"],
            pass_fds=(write_fd,),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        os.close(write_fd)
        desktop = cls("", [xvfb])
        try:
            ready, _, _ = select.select([read_fd], [], [], START_TIMEOUT_S)
            number = os.read(read_fd, 64).decode().strip() if ready else ""
            if not number:
                raise X11Unavailable("Xvfb did not start")
            desktop.display = f":{number}"
            desktop._start_window_manager()
            desktop._start_target()
        except BaseException:
            desktop.close()
            raise
        finally:
            os.close(read_fd)
        return desktop

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("WAYLAND_DISPLAY", "XDG_SESSION_TYPE")}
        return {**env, "DISPLAY": self.display}

    def _start_window_manager(self) -> None:
        with _WindowManagerLink(self.display) as wm:  # watching the root window before openbox starts
            self.processes.append(
                subprocess.Popen(
                    ["openbox", "--sm-disable"],
                    env=self.env(),
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
            wm.wait_for_root_property("_NET_SUPPORTING_WM_CHECK", time.monotonic() + START_TIMEOUT_S, "start")
            # openbox sets that property early in its start and drops the events that come before it
            # goes on to handle them: a window mapped then stays unmapped and unmanaged for good.
            wm.wait_until_answering(time.monotonic() + START_TIMEOUT_S)

    def _start_target(self) -> None:
        xev = subprocess.Popen(
            ["xev", "-event", "keyboard", "-name", TARGET], env=self.env(), stdout=subprocess.PIPE, text=True
        )
        self.processes.append(xev)
        threading.Thread(target=self._read_events, args=(xev,), daemon=True).start()
        self.activate_target()

    def activate_target(self) -> None:
        """Give the other app the focus, and return once openbox has settled it there: asked only
        when it is not there already (asking again moves the focus through "none")."""
        target = int(self._xdotool("search", "--sync", "--name", f"^{TARGET}$").split()[0])
        with _WindowManagerLink(self.display) as wm:
            deadline = time.monotonic() + START_TIMEOUT_S
            # openbox ignores requests for windows it does not manage yet
            wm.wait_for_root_property(
                "_NET_CLIENT_LIST", deadline, "manage the other app", lambda ids: target in ids
            )
            while wm.settled_active_window(deadline) != target:
                wm.ask_to_activate(target)

    def _read_events(self, xev: subprocess.Popen[str]) -> None:
        assert xev.stdout is not None
        for line in xev.stdout:
            self.events.put(line)

    def _xdotool(self, *args: str) -> str:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            out = subprocess.run(
                ["xdotool", *args], env=self.env(), capture_output=True, text=True, timeout=START_TIMEOUT_S
            )
            if out.returncode == 0:
                return out.stdout.strip()
            # "BadWindow": a window went away while xdotool walked the window tree (openbox and xev
            # make and drop windows as they start; seen once in CI); asked again
            if "BadWindow" not in out.stderr or time.monotonic() > deadline:
                raise X11Unavailable(f"xdotool {' '.join(args)} failed: {out.stderr.strip()}")
            time.sleep(0.05)

    def active_window_name(self) -> str:
        return self._xdotool("getactivewindow", "getwindowname")

    def key(self, keys: str) -> None:
        self._xdotool("key", keys)

    def wait_for_key_press(self, keysym_name: str, timeout_s: float = START_TIMEOUT_S) -> None:
        """Wait until the focused app (xev) reports a KeyPress of ``keysym_name`` (e.g. "t"), skipping
        earlier events; raises queue.Empty if none comes."""
        kind = ""
        while True:
            line = self.events.get(timeout=timeout_s)
            if line.startswith("Key"):  # "KeyPress event, serial ..." opens each event
                kind = line.split()[0]
            elif kind == "KeyPress" and f", {keysym_name})" in line:  # "... (keysym 0x74, t), ..."
                return

    def close(self) -> None:
        for proc in reversed(self.processes):
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        self.processes.clear()


class _WindowManagerLink:
    """An X connection that watches the root window's properties and pings openbox.

    A ping is a ``_NET_REQUEST_FRAME_EXTENTS`` for a window of our own, which openbox answers by
    setting ``_NET_FRAME_EXTENTS`` on it. openbox handles its events in order, and X queues the focus
    events of a focus change for openbox before it runs openbox's next request, so a ping answered
    after another answered ping has seen openbox handle every focus event of the requests it made
    before the first answer. The focus has settled when a whole ping passes with no change of the
    active window."""

    def __init__(self, display_name: str) -> None:
        from Xlib import X, display  # python-xlib: pynput's X11 dependency

        self._x = X
        self.conn = display.Display(display_name)
        self.root = self.conn.screen().root
        self.root.change_attributes(event_mask=X.PropertyChangeMask)
        self.active_atom = self.conn.intern_atom("_NET_ACTIVE_WINDOW")
        self.extents_atom = self.conn.intern_atom("_NET_FRAME_EXTENTS")
        self.ping_atom = self.conn.intern_atom("_NET_REQUEST_FRAME_EXTENTS")
        mask = X.PropertyChangeMask  # the window is never mapped: only pings name it
        self.window = self.root.create_window(0, 0, 1, 1, 0, X.CopyFromParent, event_mask=mask)
        self.conn.sync()

    def __enter__(self) -> _WindowManagerLink:
        return self

    def __exit__(self, *exc: object) -> None:
        self.window.destroy()
        self.conn.close()

    def active_window(self) -> int:
        prop = self.root.get_full_property(self.active_atom, self._x.AnyPropertyType)
        return int(prop.value[0]) if prop is not None and len(prop.value) else 0

    def settled_active_window(self, deadline: float) -> int:
        while True:
            moved = self.ping(deadline)
            moved = self.ping(deadline) or moved
            if not moved:
                return self.active_window()

    def ask_to_activate(self, window: int) -> None:
        # source 2: a pager's request, which openbox grants without focus-stealing checks (as xdotool)
        self._send_to_root(self.active_atom, window, [2, self._x.CurrentTime, 0, 0, 0])

    def wait_for_root_property(
        self, name: str, deadline: float, what: str, holds: Callable[[Sequence[int]], bool] = lambda _: True
    ) -> None:
        """Wait until the root window has property ``name`` and its value ``holds``; ``what`` openbox
        failed to do, for the error."""
        atom = self.conn.intern_atom(name)
        while True:
            prop = self.root.get_full_property(atom, self._x.AnyPropertyType)
            if prop is not None and holds(prop.value):
                return
            while not self._is_property_change(self._event(deadline, what), self.root.id, atom):
                pass

    def wait_until_answering(self, deadline: float) -> None:
        """Ping openbox until it answers (pings it drops while it starts get none)."""
        while True:
            self._send_ping()
            resend = min(deadline, time.monotonic() + PING_RESEND_S)
            while (event := self._next_event(resend)) is not None:
                if self._is_pong(event):
                    return
            if time.monotonic() >= deadline:
                raise self._timed_out("answer a ping")

    def ping(self, deadline: float) -> bool:
        """Ping openbox; whether the active window changed before the answer came."""
        self._send_ping()
        moved = False
        while not self._is_pong(event := self._event(deadline, "answer a ping")):
            moved = self._is_active_change(event) or moved
        return moved

    def _send_ping(self) -> None:
        self._send_to_root(self.ping_atom, self.window.id, [0, 0, 0, 0, 0])

    def _is_pong(self, event: Any) -> bool:
        return self._is_property_change(event, self.window.id, self.extents_atom)

    def _is_active_change(self, event: Any) -> bool:
        return self._is_property_change(event, self.root.id, self.active_atom)

    def _is_property_change(self, event: Any, window: int, atom: int) -> bool:
        return event.type == self._x.PropertyNotify and event.window.id == window and event.atom == atom

    def _send_to_root(self, message: int, window: int, data: list[int]) -> None:
        from Xlib.protocol import event

        self.root.send_event(
            event.ClientMessage(window=window, client_type=message, data=(32, data)),
            event_mask=self._x.SubstructureRedirectMask | self._x.SubstructureNotifyMask,
        )
        self.conn.flush()

    def _event(self, deadline: float, what: str) -> Any:
        event = self._next_event(deadline)
        if event is None:
            raise self._timed_out(what)
        return event

    def _timed_out(self, what: str) -> X11Unavailable:
        return X11Unavailable(
            f"openbox did not {what} in {START_TIMEOUT_S:.0f} s (active window {self.active_window():#x})"
        )

    def _next_event(self, until: float) -> Any | None:
        """The next event, or None if none came by time ``until``."""
        while not self.conn.pending_events():
            if not select.select([self.conn], [], [], max(0.0, until - time.monotonic()))[0]:
                return None
        return self.conn.next_event()
