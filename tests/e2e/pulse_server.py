"""A private PulseAudio daemon with a null sink, for end-to-end capture tests and screenshots.

Usage::

    with PulseServer.start(Path("/tmp/x")) as pulse:       # raises PulseUnavailable with a reason
        sink = pulse.add_null_sink("captionist_e2e")        # its monitor: f"{sink}.monitor"
        env = pulse.env()                                   # for every client: sounddevice, paplay
        pulse.say("Hello there", sink)                      # espeak-ng into the sink, real time
        pulse.wait_for_recording()                          # someone records from a source

The daemon runs in the foreground of a child process that this object owns and stops by its pid;
its socket, cookie and state live under a short private folder (Unix socket paths are limited
to ~100 bytes, so pytest's long tmp paths are not used for it). It works as root without a
session bus: ``--system=false`` with its own runtime dir, no D-Bus, no default.pa (``-n``).
"""

from __future__ import annotations

import os
import shutil
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
        log = scratch / "pulseaudio.log"
        cmd = [
            "pulseaudio", "-n", "--daemonize=no", "--system=false", "--exit-idle-time=-1",
            "--disallow-exit", "--use-pid-file=no", "--log-target=stderr", "--log-level=warning",
            "-L", "module-native-protocol-unix",
        ]  # fmt: skip
        with open(log, "wb") as log_file:
            proc = subprocess.Popen(cmd, env=_client_env(root), stdout=log_file, stderr=subprocess.STDOUT)
        server = cls(proc, root, log)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                server.close()
                raise PulseUnavailable(f"pulseaudio exited ({proc.returncode}): {server.log_tail()}")
            if server.pactl("info", check=False).returncode == 0:
                return server
            time.sleep(0.1)
        server.close()
        raise PulseUnavailable(f"pulseaudio did not answer within {timeout_s:g} s: {server.log_tail()}")

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
        return name

    def recording_streams(self) -> int:
        """How many clients record from any source right now."""
        return len(self.pactl("list", "short", "source-outputs").stdout.splitlines())

    def wait_for_recording(self, timeout_s: float = 20.0) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.recording_streams() > 0:
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

    def close(self) -> None:
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(timeout=5)
        shutil.rmtree(self._root, ignore_errors=True)

    def __enter__(self) -> PulseServer:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


_CLEARED = ("PULSE_SINK", "PULSE_SOURCE", "DBUS_SESSION_BUS_ADDRESS")


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
