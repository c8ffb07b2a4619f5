"""Which model to suggest for this computer: a small pure rule, and the probe that feeds it.

Usage::

    from captionist.models.recommend import recommend, probe_hardware
    hw = probe_hardware()                          # Hardware(physical_cores, ram_gb, has_gpu, gpu)
    r = recommend(hw.physical_cores, hw.ram_gb, hw.has_gpu)
    r.entry.title, r.quantization, r.reason

The rule: a usable GPU runs Voxtral (the most accurate) live. Without one, a FastConformer model:
Nemotron Speech Streaming 0.6B at Q8_0 when the CPU has at least ``MIN_CORES`` physical cores and
the computer at least ``MIN_RAM_GB`` of RAM, else Parakeet-EOU 120M, which keeps up on any CPU.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from captionist.models.catalogue import NEMOTRON_STREAMING, PARAKEET_EOU, VOXTRAL_REALTIME, CatalogueEntry
from captionist.models.install import total_ram_gb

MIN_CORES = 4
MIN_RAM_GB = 8.0


@dataclass(frozen=True)
class Recommendation:
    entry: CatalogueEntry
    quantization: str
    reason: str


def recommend(physical_cores: int | None, ram_gb: float | None, has_gpu: bool) -> Recommendation:
    """The model to suggest (unknown cores or RAM count as too few)."""
    if has_gpu:
        e = VOXTRAL_REALTIME
        return Recommendation(e, e.default_quantization, "this computer has a GPU, which runs Voxtral live")
    cores, ram = physical_cores or 0, ram_gb or 0.0
    if cores >= MIN_CORES and ram >= MIN_RAM_GB:
        return Recommendation(
            NEMOTRON_STREAMING, "Q8_0", f"no GPU, but {cores} CPU cores and {ram:.0f} GB RAM run it live"
        )
    have = f"{cores} CPU cores" if cores else "an unknown number of CPU cores"
    return Recommendation(
        PARAKEET_EOU,
        "Q8_0",
        f"no GPU and {have} / {ram:.0f} GB RAM: the smallest model keeps up "
        f"(Nemotron wants {MIN_CORES} cores and {MIN_RAM_GB:.0f} GB)",
    )


@dataclass(frozen=True)
class Hardware:
    physical_cores: int | None
    ram_gb: float | None
    has_gpu: bool
    gpu: str  # the backend the engine picks with backend="auto" ("CPU" when there is no GPU)


def physical_cores() -> int | None:
    try:
        from captionist import _engine

        return int(_engine.physical_cores()) or None
    except (ImportError, AttributeError, RuntimeError):
        count = os.cpu_count()
        return count // 2 if count and count > 1 else count


def probe_gpu(model_path: Path | None = None, loader: Any = None) -> str:
    """The compute backend ``backend="auto"`` picks, e.g. "CPU", "CUDA0", "Metal".

    ``captionist._engine`` has no device list, so this loads the bundled demo model (10 MB) with
    ``backend="auto"`` and reads the backend it got. "CPU" when that fails.
    """
    from captionist import paths

    path = model_path or paths.bundled_demo_model()
    try:
        if loader is None:
            from captionist.engine import Model as loader
        return str(loader(path, backend="auto").info.get("backend", "CPU"))
    except Exception:  # no engine, no demo model: assume no GPU
        return "CPU"


def probe_hardware() -> Hardware:
    gpu = probe_gpu()
    return Hardware(physical_cores(), total_ram_gb(), not gpu.upper().startswith("CPU"), gpu)
