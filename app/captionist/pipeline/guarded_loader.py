"""The app's model loader: a model that goes to a GPU is loaded and run once inside a crash trial.

Usage::

    loader = guarded_loader(guard)                  # a ModelLoader for SessionController
    model = loader(Path("model.gguf"), "auto")

A GPU driver can crash the process when a model first runs on it (compiling its shaders, a device
that stops answering), not only when it starts. So a model bound for a GPU is loaded and transcribes
a second of silence (``WARM_UP_S``) inside ``BackendGuard.trial(..., OPEN_MODEL)``: a crash there
turns that backend off from the next start (``captionist.backend_guard``), and the first words of
a session do not wait for the shaders either. A model for the CPU is loaded as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from captionist.backend_guard import BackendGuard, BackendStage, display_name
from captionist.engine import SAMPLE_RATE

ModelLoader = Callable[[Path, str], Any]  # (model file, backend setting) -> a loaded model

WARM_UP_S = 1.0
MODULE_NAMES = {"rocm": "hip"}  # ggml's device registry name -> its module's name, where they differ


def target_backend(backend: str, devices: Sequence[Any]) -> str | None:
    """The module name of the non-CPU device ``backend`` ("auto", "cpu", "vulkan", "Vulkan1") picks
    among ``devices`` (``engine.compute_devices()``), as the engine picks; None for the CPU."""
    want = backend.lower()
    if want == "cpu":
        return None
    if want == "auto":
        device = next((d for d in devices if d.is_default), None)
    else:
        named = (d for d in devices if d.backend.lower() == want or d.name.lower().startswith(want))
        device = next(named, None)
    if device is None or device.type.value == "cpu":
        return None
    name = device.backend.lower()
    return MODULE_NAMES.get(name, name)


def _devices() -> list[Any]:
    from captionist.engine import compute_devices

    return list(compute_devices())


def guarded_loader(
    guard: BackendGuard,
    load: ModelLoader | None = None,
    devices: Callable[[], Sequence[Any]] = _devices,
    notice: Callable[[str], object] | None = None,
) -> ModelLoader:
    """A ``ModelLoader`` that loads through ``load`` (default: the controller's
    ``load_engine_model``), in a trial when the model goes to a GPU. A GPU backend that is off (it
    crashed) is passed over for the CPU, also where the user chose it by name in Preferences and
    where a ggml build has it linked in, so it cannot be left unloaded; ``notice`` is told so (the
    commands print it; the app said it when the crash was found). Imports no Qt (the commands use
    it)."""
    if load is None:
        from captionist.pipeline.controller import load_engine_model

        load = load_engine_model

    def loader(path: Path, backend: str) -> Any:
        target = target_backend(backend, devices())
        off = guard.disabled()
        if target in off or (target is None and any(backend.lower().startswith(name) for name in off)):
            # chosen before it crashed (its module is not loaded now), or linked into ggml
            if notice is not None:
                name = display_name(target or next(n for n in off if backend.lower().startswith(n)))
                notice(f"{name} is off since it crashed Captionist: the model runs on the CPU")
            return load(path, "cpu")
        if target is None:
            return load(path, backend)
        with guard.trial(target, BackendStage.OPEN_MODEL):
            model = load(path, backend)
            warm_up = getattr(model, "transcribe", None)
            if warm_up is not None:
                warm_up(np.zeros(round(SAMPLE_RATE * WARM_UP_S), dtype=np.float32))
            return model

    return loader
