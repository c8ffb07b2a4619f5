"""A private PulseAudio daemon with a null sink, for end-to-end capture tests and screenshots.

Usage::

    with PulseServer.start(Path("/tmp/x")) as pulse:       # raises PulseUnavailable with a reason
        sink = pulse.add_null_sink("captionist_e2e")        # its monitor: f"{sink}.monitor"
        env = pulse.env()                                   # for every client: sounddevice, paplay
        pulse.say("Hello there", sink)                      # espeak-ng into the sink, real time
        pulse.wait_for_recording()                          # someone records from a source
        pulse.restart()                                     # the sound server dies and comes back

The daemon runs in the foreground of a child process that this object owns and stops by its pid;
its socket, cookie and state live under a short private folder (Unix socket paths are limited
to ~100 bytes, so pytest's long tmp paths are not used for it). It works as root without a
session bus: ``--system=false`` with its own runtime dir, no D-Bus, no default.pa (``-n``).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType

TOOLS = ("pulseaudio", "pactl", "paplay", "espeak-ng")


class PulseUnavailable(RuntimeError):
    """PulseAudio or espeak-ng is missing or would not start; the message says which."""


def missing_tools() -> list[str]:
    return [t for t in TOOLS if shutil.which(t) is None]


class PulseServer:
    def __init__(self, proc: subprocess.Popen[bytes], root: Path, log: Path) -> None:
        self._proc, self._root, self._log = proc, root, log
        self._sinks: list[tuple[str, int]] = []  # (name, rate) of the null sinks, for ``restart``

    @classmethod
    def start(cls, scratch: Path, timeout_s: float = 15.0) -> PulseServer:
        """Start the daemon; returns once ``pactl info`` answers. ``scratch`` receives its log."""
        missing = missing_tools()
        if missing:
            packages = "pulseaudio pulseaudio-utils espeak-ng"
            raise PulseUnavailable(f"not installed: {', '.join(missing)} (apt-get install {packages})")
        root = Path(tempfile.mkdtemp(prefix="cap-pa-"))
        (root / "runtime").mkdir(mode=0o700)
        scratch.mkdir(parents=True, exist_ok=True)
        server = cls(_spawn(root, scratch / "pulseaudio.log"), root, scratch / "pulseaudio.log")
        server._wait_ready(timeout_s)
        return server

    def _wait_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                self.close()
                raise PulseUnavailable(f"pulseaudio exited ({self._proc.returncode}): {self.log_tail()}")
            if self.pactl("info", check=False).returncode == 0:
                return
            time.sleep(0.1)
        self.close()
        raise PulseUnavailable(f"pulseaudio did not answer within {timeout_s:g} s: {self.log_tail()}")

    def restart(self, down_s: float = 0.0, timeout_s: float = 15.0) -> None:
        """Stop the daemon (as a crash or a user's ``pulseaudio -k`` would: every client loses its
        streams), wait ``down_s``, start it again on the same socket with the same null sinks."""
        self._stop_daemon()
        time.sleep(down_s)
        self._proc = _spawn(self._root, self._log, append=True)
        self._wait_ready(timeout_s)
        sinks, self._sinks = self._sinks, []
        for name, rate in sinks:
            self.add_null_sink(name, rate)

    def hang(self) -> None:
        """Stop the daemon (SIGSTOP): it keeps its socket, so clients connect and get no answer, as
        from a wedged sound server. ``answer`` continues it."""
        os.kill(self._proc.pid, signal.SIGSTOP)

    def answer(self) -> None:
        os.kill(self._proc.pid, signal.SIGCONT)

    def env(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """``base`` (default: this process's environment) pointed at this daemon only."""
        return _client_env(self._root, base)

    def apply_to(self, environ: os._Environ[str]) -> None:
        """Point ``os.environ`` here (before sounddevice is imported, so PortAudio sees it)."""
        for key in _CLEARED:
            environ.pop(key, None)
        environ.update(self.env({}))

    def pactl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        out = subprocess.run(["pactl", *args], env=self.env(), capture_output=True, text=True, timeout=10)
        if check and out.returncode != 0:
            raise PulseUnavailable(f"pactl {' '.join(args)} failed: {out.stderr.strip()}")
        return out

    def add_null_sink(self, name: str, rate: int = 48000) -> str:
        """Load ``module-null-sink``; returns the sink name (its monitor source is ``<name>.monitor``)."""
        self.pactl(
            "load-module",
            "module-null-sink",
            f"sink_name={name}",
            f"rate={rate}",
            "channels=2",
            f"sink_properties=device.description={name}",  # its monitor is then "Monitor of <name>"
        )
        self._sinks.append((name, rate))
        return name

    def recording_streams(self) -> int:
        """How many clients record from any source right now."""
        return len(self.pactl("list", "short", "source-outputs").stdout.splitlines())

    def wait_for_recording(self, timeout_s: float = 20.0, streams: int = 1) -> bool:
        """Whether at least ``streams`` clients record within ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.recording_streams() >= streams:
                return True
            time.sleep(0.05)
        return False

    def say(
        self, text: str, sink: str, *, wait: bool = True, espeak_args: str = ""
    ) -> subprocess.Popen[bytes]:
        """Speak ``text`` with espeak-ng into ``sink`` (plays in real time); ``espeak_args`` are
        extra espeak-ng options such as ``-v en-us -g 20``."""
        cmd = f"espeak-ng --stdout -s 150 {espeak_args} {_quote(text)} | paplay --device={_quote(sink)}"
        proc = subprocess.Popen(["sh", "-c", cmd], env=self.env(), stderr=subprocess.PIPE)
        if wait:
            _, err = proc.communicate(timeout=60)
            if proc.returncode != 0:
                raise PulseUnavailable(f"playing speech failed: {err.decode(errors='replace').strip()}")
        return proc

    def log_tail(self, lines: int = 5) -> str:
        try:
            text = self._log.read_text(errors="replace").strip().splitlines()
        except OSError:
            return "(no log)"
        return " | ".join(text[-lines:]) or "(empty log)"

    def _stop_daemon(self) -> None:
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(timeout=5)

    def close(self) -> None:
        self._stop_daemon()
        shutil.rmtree(self._root, ignore_errors=True)

    def __enter__(self) -> PulseServer:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


_CLEARED = ("PULSE_SINK", "PULSE_SOURCE", "DBUS_SESSION_BUS_ADDRESS")


def _spawn(root: Path, log: Path, append: bool = False) -> subprocess.Popen[bytes]:
    """The daemon in the foreground of a child, its socket and state under ``root``."""
    cmd = [
        "pulseaudio", "-n", "--daemonize=no", "--system=false", "--exit-idle-time=-1",
        "--disallow-exit", "--use-pid-file=no", "--log-target=stderr", "--log-level=warning",
        "-L", "module-native-protocol-unix",
    ]  # fmt: skip
    with open(log, "ab" if append else "wb") as log_file:
        return subprocess.Popen(cmd, env=_client_env(root), stdout=log_file, stderr=subprocess.STDOUT)


def _client_env(root: Path, base: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in (os.environ if base is None else base).items() if k not in _CLEARED}
    runtime = root / "runtime"
    env.update(
        PULSE_RUNTIME_PATH=str(runtime),
        PULSE_SERVER=f"unix:{runtime / 'native'}",
        PULSE_STATE_PATH=str(root / "state"),
        XDG_RUNTIME_DIR=str(runtime),
        XDG_CONFIG_HOME=str(root / "config"),
        HOME=str(root),
    )
    return env


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"
