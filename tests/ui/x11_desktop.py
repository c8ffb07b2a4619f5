"""A private X11 desktop for end-to-end tests: Xvfb, the openbox window manager, and another app's
window (xev, which prints every key it receives) focused, as a user's call window would be.

    desktop = X11Desktop.start()          # X11Unavailable if a tool is missing or does not come up
    desktop.display                       # ":N", for $DISPLAY
    desktop.active_window_name()          # "captionist-e2e-target": the other app has the focus
    desktop.key("ctrl+alt+shift+t")       # xdotool: as if typed on the keyboard (XTEST)
    desktop.wait_for_key_press("t")       # the focused app received it too (not swallowed)
    desktop.close()

Every wait is for an event (Xvfb writes its display number when ready, openbox sets
``_NET_SUPPORTING_WM_CHECK`` on the root window, ``xdotool --sync`` waits for the window and the
focus, xev prints each key event); the timeouts only bound a broken tool.
"""

from __future__ import annotations

import os
import queue
import select
import shutil
import subprocess
import threading
from dataclasses import dataclass, field

TOOLS = ("Xvfb", "openbox", "xdotool", "xev")
TARGET = "captionist-e2e-target"  # the other app's window title
START_TIMEOUT_S = 30.0


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
        from Xlib import X, display  # python-xlib: pynput's X11 dependency

        conn = display.Display(self.display)
        try:
            root = conn.screen().root
            root.change_attributes(event_mask=X.PropertyChangeMask)  # before openbox can set it
            check = conn.intern_atom("_NET_SUPPORTING_WM_CHECK")
            self.processes.append(
                subprocess.Popen(
                    ["openbox", "--sm-disable"],
                    env=self.env(),
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
            while root.get_full_property(check, X.AnyPropertyType) is None:
                if not conn.pending_events() and not select.select([conn], [], [], START_TIMEOUT_S)[0]:
                    raise X11Unavailable("openbox did not start")
                conn.next_event()
        finally:
            conn.close()

    def _start_target(self) -> None:
        xev = subprocess.Popen(
            ["xev", "-event", "keyboard", "-name", TARGET], env=self.env(), stdout=subprocess.PIPE, text=True
        )
        self.processes.append(xev)
        threading.Thread(target=self._read_events, args=(xev,), daemon=True).start()
        self.activate_target()

    def activate_target(self) -> None:
        """Give the other app the focus (and wait until the window manager says it has it)."""
        self._xdotool("search", "--sync", "--name", f"^{TARGET}$", "windowactivate", "--sync")

    def _read_events(self, xev: subprocess.Popen[str]) -> None:
        assert xev.stdout is not None
        for line in xev.stdout:
            self.events.put(line)

    def _xdotool(self, *args: str) -> str:
        out = subprocess.run(
            ["xdotool", *args], env=self.env(), capture_output=True, text=True, timeout=START_TIMEOUT_S
        )
        if out.returncode != 0:
            raise X11Unavailable(f"xdotool {' '.join(args)} failed: {out.stderr.strip()}")
        return out.stdout.strip()

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
