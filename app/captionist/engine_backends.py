"""Which of ggml's backend modules this process loads, each GPU driver's start wrapped by a guard.

Usage::

    from captionist import engine_backends
    engine_backends.set_policy(BackendPolicy(skip=frozenset({"vulkan"}), trial=guard.driver_trial))
    engine_backends.loaded()        # ["vulkan", ...]: the modules registered (loads them if not yet)
    engine_backends.skipped()       # the modules found but left out by the policy

ggml built with its backends as loadable modules (``tools/install_ggml.sh``, the installers) has one
CPU module per instruction-set level and one per GPU API (``libggml-vulkan.so``, ``ggml-cuda.dll``).
Loading a GPU module starts its driver, and a broken driver can take the process down with it (a
crash in ``vkCreateInstance``), where no exception can catch it. So the modules are loaded here, one
at a time, before the engine's first use (``captionist.engine`` calls ``ensure_loaded``): the CPU's
best variant, then each other module that the policy does not ``skip``, inside ``trial(name)``, which
the app uses to note that it is starting that driver (``captionist.backend_guard``). A module whose
driver or device is missing is refused by ggml and skipped quietly.

The policy must be set before the engine is first used; by default every module is loaded and
nothing is guarded (tools, tests, ``captionist.engine`` used as a library). A linked build (the PyPI
wheels) has nothing to load. Loading is process-wide and happens once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

BackendTrial = Callable[[str], AbstractContextManager[object]]


@dataclass(frozen=True)
class BackendPolicy:
    skip: frozenset[str] = frozenset()  # module names ("vulkan", "cuda") not to load
    trial: BackendTrial | None = None  # wraps the loading of each non-CPU module (its driver starts)
    why_skipped: str = "the app's policy left it out"  # ends the error for a model asked onto one


class BackendsAlreadyLoaded(RuntimeError):
    """``set_policy`` after the engine's first use: the modules are loaded already."""


_lock = threading.RLock()  # a trial may use the engine: ensure_loaded then returns at once
_policy = BackendPolicy()
_loaded: list[str] | None = None
_skipped: list[str] = []
_error: str | None = None  # why no CPU module could be loaded


def set_policy(policy: BackendPolicy) -> None:
    """Use ``policy`` when the modules are loaded; raises ``BackendsAlreadyLoaded`` if they are."""
    global _policy
    with _lock:
        if _loaded is not None:
            raise BackendsAlreadyLoaded("set the policy before the engine's first use")
        _policy = policy


def ensure_loaded(engine: Any) -> None:
    """Load the modules (once per process) through ``engine`` (``captionist._engine``)."""
    global _loaded
    with _lock:
        if _loaded is not None:
            return
        names: list[str] = []
        _loaded = names  # set first: a trial that uses the engine must not load again
        try:
            engine.load_cpu_backend()
        except RuntimeError as exc:
            global _error
            _error = str(exc)  # the engine's own search (GGML_BACKEND_PATH) may still find one
            return
        for name, path in engine.backend_modules():
            if name in _policy.skip:
                _skipped.append(name)
                continue
            with _policy.trial(name) if _policy.trial else nullcontext():
                if engine.load_backend_module(path):
                    names.append(name)


def loaded() -> list[str]:
    """The non-CPU modules registered in this process (loading them now if the engine has not)."""
    from captionist.engine import _engine_module

    _engine_module()
    return list(_loaded or [])


def skipped() -> list[str]:
    """The modules found but left out by the policy (empty until loading)."""
    with _lock:
        return list(_skipped)


def load_error() -> str | None:
    """Why no CPU module could be loaded from the engine's module folder (None: one was, or the CPU
    backend is linked in); for the error a build without a usable backend ends in."""
    with _lock:
        return _error


def why_not_loaded(backend: str) -> str | None:
    """Why ``backend`` ("vulkan", "Vulkan1") has no device here when the policy left its module out,
    else None (then ggml's own reason stands: no driver, not built)."""
    want = backend.lower()
    with _lock:
        name = next((n for n in _skipped if want.startswith(n)), None)
        return f"its module ({name}) was not loaded: {_policy.why_skipped}" if name else None
