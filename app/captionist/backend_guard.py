"""A GPU backend whose driver crashed Captionist is not started again until the user asks.

Usage::

    guard = user_guard()                        # this user's (paths.backend_guard_dir())
    new = guard.collect()                       # at start: the trials a dead process left behind
    engine_backends.set_policy(guard.policy())  # disabled backends are not loaded; the rest in trials
    with guard.trial("vulkan", BackendStage.OPEN_MODEL):
        model = Model(path, backend="vulkan")   # and its first computations
    guard.disabled()                            # {"vulkan": BackendCrash(...)}
    guard.enable("vulkan")                      # the user's "turn it back on": from the next start
    guard.running()                             # [(backend, stage, seconds)]: this process's trials

A crash inside a GPU driver (starting it, compiling its shaders, a device that stops answering)
takes the whole process down, past any exception handler, and it would again at every start: the
app would never open. So each step that runs driver code for the first time is a *trial*: a small
file in ``folder`` naming the backend and the step, held with an OS lock while the step runs and
marked done when it returns. A process that dies in the step leaves the file unlocked and not done;
the next ``collect`` turns it into a ``BackendCrash`` record (``crashed.json``), and a disabled
backend is neither loaded nor picked until ``enable``. The lock tells a live trial in another
process (``captionist transcribe`` beside the app) from a dead one (``transcript.journal_lock``).

A driver that hangs instead (a start that never returns) is this process's trial still running:
``running()`` says for how long, for the app to tell the user; a process that is then quit leaves
the trial behind, and the next start turns that backend off, as after a crash.

The guard never stops the work it guards: a folder that cannot be written (a full disk) runs the
step unguarded, and an unreadable or hostile record counts as no record.
"""

from __future__ import annotations

import enum
import itertools
import json
import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from captionist import engine_backends, paths
from captionist.atomic_file import replace_file
from captionist.engine_backends import BackendPolicy, BackendsAlreadyLoaded
from captionist.transcript.journal_lock import hold_journal, journal_in_use

RECORD = "crashed.json"
TRIAL_GLOB = "trial-*.json"
MAX_FILE_BYTES = 64 * 1024  # a record or trial is a few hundred bytes; anything bigger is not ours
_NAME = re.compile(r"^[a-z0-9_]{1,32}$")  # a ggml backend module's name: "vulkan", "cuda"
# How people know the backends (module names are lower case)
DISPLAY_NAMES = {"cuda": "CUDA", "vulkan": "Vulkan", "metal": "Metal", "hip": "ROCm", "sycl": "SYCL",
                 "opencl": "OpenCL", "musa": "MUSA", "cann": "CANN", "blas": "BLAS"}  # fmt: skip


class BackendStage(str, enum.Enum):
    """What Captionist was doing with a backend when it crashed."""

    START_DRIVER = "start_driver"  # loading its module: the driver starts and lists its devices
    OPEN_MODEL = "open_model"  # loading a model on it and computing its first steps


def display_name(backend: str) -> str:
    return DISPLAY_NAMES.get(backend, backend)


@dataclass(frozen=True)
class BackendCrash:
    backend: str  # module name: "vulkan"
    stage: BackendStage
    when: datetime  # local time the trial started

    def message(self) -> str:
        """What the app says once, at the start after the crash."""
        name = display_name(self.backend)
        starting = self.stage is BackendStage.START_DRIVER
        doing = "starting the graphics driver for" if starting else "loading a model on"
        return (
            f"Captionist closed unexpectedly last time while {doing} {name}. {name} is turned off, so "
            f"models run on the CPU. An updated graphics driver may fix it; Preferences → General "
            f"can turn {name} back on."
        )

    def describe(self) -> str:
        """One line for where the off backends are listed (Preferences, ``captionist devices``)."""
        name = display_name(self.backend)
        starting = self.stage is BackendStage.START_DRIVER
        doing = "when its driver started" if starting else "when a model ran on it"
        return f"{name} is off: it crashed Captionist {self.when:%d %b %Y, %H:%M} {doing}."

    def to_json(self) -> dict[str, str]:
        when = self.when.isoformat(timespec="seconds")
        return {"backend": self.backend, "stage": self.stage.value, "when": when}

    @staticmethod
    def from_json(d: object) -> BackendCrash | None:
        """The crash ``d`` describes, or None for anything malformed."""
        if not isinstance(d, dict):
            return None
        backend, stage, when = d.get("backend"), d.get("stage"), d.get("when")
        if not isinstance(backend, str) or not _NAME.match(backend) or not isinstance(when, str):
            return None
        try:
            return BackendCrash(backend, BackendStage(stage), datetime.fromisoformat(when))
        except (ValueError, TypeError):
            return None


def _read_small(path: Path) -> bytes | None:
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError:
        return None
    return data if len(data) <= MAX_FILE_BYTES else None


def _parse(data: bytes | None) -> object:
    try:
        return json.loads(data.decode("utf-8")) if data else None
    except (ValueError, UnicodeDecodeError):
        return None


class BackendGuard:
    def __init__(self, folder: Path, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.folder = Path(folder)
        self._serial = itertools.count()
        self._clock = clock
        self._lock = threading.Lock()
        self._running: dict[int, tuple[str, BackendStage, float]] = {}  # this process's trials
        self._listeners: list[Callable[[], object]] = []

    # -- the record of crashed backends

    def disabled(self) -> dict[str, BackendCrash]:
        """Backends that crashed Captionist and are off, by module name."""
        data = _parse(_read_small(self.folder / RECORD))
        crashes = data.get("crashes") if isinstance(data, dict) else None
        out: dict[str, BackendCrash] = {}
        for item in crashes if isinstance(crashes, list) else []:
            crash = BackendCrash.from_json(item)
            if crash is not None:
                out[crash.backend] = crash
        return out

    def _write(self, crashes: dict[str, BackendCrash]) -> None:
        text = json.dumps({"crashes": [c.to_json() for c in crashes.values()]}, indent=1)
        self.folder.mkdir(parents=True, exist_ok=True)
        replace_file(self.folder / RECORD, text, durable=True)

    def enable(self, backend: str) -> None:
        """Turn ``backend`` back on (loaded from the next start). Raises ``OSError`` if the record
        cannot be written."""
        crashes = self.disabled()
        if crashes.pop(backend, None) is not None:
            self._write(crashes)

    # -- trials

    def collect(self) -> list[BackendCrash]:
        """Turn the trials of processes that died into crash records; returns the new ones. Trials
        still running in another process are left alone. Never raises."""
        found: list[BackendCrash] = []
        try:
            trials = sorted(self.folder.glob(TRIAL_GLOB))
        except OSError:
            return found
        for path in trials:
            if journal_in_use(path):
                continue  # its process is alive and in the step
            data = _parse(_read_small(path))
            crash = BackendCrash.from_json(data) if isinstance(data, dict) and not data.get("done") else None
            if crash is not None:
                found.append(crash)
            with suppress(OSError):
                path.unlink()
        if found:
            crashes = self.disabled()
            for crash in found:
                crashes[crash.backend] = crash
            try:
                self._write(crashes)
            except OSError:
                pass  # the backends are still skipped in this run (policy reads the list given)
        return found

    @contextmanager
    def trial(self, backend: str, stage: BackendStage) -> Iterator[None]:
        """Run the body as a trial of ``backend`` (a module name). A crash inside it disables the
        backend at the next start; an exception is not a crash (the trial ends as done)."""
        fd = self._open_trial(backend, stage)
        key = next(self._serial)
        with self._lock:
            self._running[key] = (backend, stage, self._clock())
        self._notify()
        try:
            yield
        finally:
            with self._lock:
                del self._running[key]
            if fd is not None:
                self._close_trial(*fd)
            self._notify()

    def add_listener(self, listener: Callable[[], object]) -> None:
        """Call ``listener()`` (on the trial's thread) whenever a trial of this process begins or ends."""
        self._listeners.append(listener)

    def _notify(self) -> None:
        for listener in list(self._listeners):
            with suppress(RuntimeError):  # a Qt listener deleted at quit while a load still runs
                listener()

    def running(self) -> list[tuple[str, BackendStage, float]]:
        """This process's trials now: (backend, stage, seconds since it began), oldest first."""
        now = self._clock()
        with self._lock:
            return [(b, stage, now - t) for b, stage, t in self._running.values()]

    def _open_trial(self, backend: str, stage: BackendStage) -> tuple[int, Path] | None:
        when = datetime.now().isoformat(timespec="seconds")
        payload = json.dumps({"backend": backend, "stage": stage.value, "when": when, "pid": os.getpid()})
        path = self.folder / f"trial-{os.getpid()}-{next(self._serial)}.json"
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR | getattr(os, "O_BINARY", 0), 0o600)
        except OSError:
            return None  # unguarded: the work goes on
        try:
            hold_journal(fd)  # first, then the content: an empty unlocked trial is not a crash
            os.write(fd, payload.encode())
        except OSError:
            os.close(fd)
            with suppress(OSError):
                path.unlink()
            return None
        return fd, path

    @staticmethod
    def _close_trial(fd: int, path: Path) -> None:
        with suppress(OSError):  # done first: once it says so, a crash from here on is no crash
            os.lseek(fd, 0, os.SEEK_SET)
            os.ftruncate(fd, 0)
            os.write(fd, b'{"done": true}')
        with suppress(OSError):
            os.close(fd)
        with suppress(OSError):
            path.unlink()

    def policy(self) -> BackendPolicy:
        """The engine's loading policy: disabled backends skipped, the others started in trials."""
        return BackendPolicy(
            skip=frozenset(self.disabled()),
            trial=lambda name: self.trial(name, BackendStage.START_DRIVER),
            why_skipped="it crashed Captionist before; the app's Preferences → General can turn it back on",
        )

    def install(self) -> list[BackendCrash]:
        """What a process does at its start: ``collect`` and then the engine's loading ``policy``
        (unless the engine is in use already: tests build the app more than once). Returns the new
        crashes, for the caller to tell the user."""
        found = self.collect()
        with suppress(BackendsAlreadyLoaded):
            engine_backends.set_policy(self.policy())
        return found


def user_guard() -> BackendGuard:
    """The guard of this user's app and commands (``paths.backend_guard_dir()``)."""
    return BackendGuard(paths.backend_guard_dir())
