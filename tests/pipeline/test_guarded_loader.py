"""captionist.pipeline.guarded_loader: a model bound for a GPU loads and runs its first second inside
a crash trial; a model for the CPU, or for a GPU backend that is off, loads as it is."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from captionist.backend_guard import BackendGuard, BackendStage
from captionist.engine import DeviceType
from captionist.pipeline.guarded_loader import WARM_UP_S, guarded_loader, target_backend


@dataclass(frozen=True)
class Device:
    backend: str
    name: str
    type: DeviceType
    is_default: bool = False


CPU = Device("CPU", "CPU", DeviceType.CPU)
VULKAN0 = Device("Vulkan", "Vulkan0", DeviceType.INTEGRATED_GPU)
VULKAN1 = Device("Vulkan", "Vulkan1", DeviceType.GPU, is_default=True)
ROCM = Device("ROCm", "ROCm0", DeviceType.GPU)


@pytest.mark.parametrize(
    ("backend", "devices", "expected"),
    [
        ("auto", [CPU, VULKAN0, VULKAN1], "vulkan"),
        ("auto", [Device("CPU", "CPU", DeviceType.CPU, is_default=True), VULKAN0], None),
        ("auto", [], None),
        ("cpu", [CPU, VULKAN1], None),
        ("CPU", [CPU, VULKAN1], None),
        ("vulkan", [CPU, VULKAN0, VULKAN1], "vulkan"),
        ("vulkan1", [CPU, VULKAN0, VULKAN1], "vulkan"),
        ("cuda", [CPU, VULKAN1], None),  # not here: the engine's own error says what is
        ("rocm", [CPU, ROCM], "hip"),  # ggml's ROCm devices come from its "hip" module
    ],
)
def test_the_target_is_the_device_the_engine_would_pick(
    backend: str, devices: list[Device], expected: str | None
) -> None:
    assert target_backend(backend, devices) == expected


class Loads:
    """A fake ``load_engine_model`` that notes the trials open while it runs and what was warmed up."""

    def __init__(self, guard_dir: Path) -> None:
        self.guard_dir = guard_dir
        self.calls: list[tuple[str, list[dict[str, Any]]]] = []
        self.warm_ups: list[np.ndarray] = []

    def trials(self) -> list[dict[str, Any]]:
        return [json.loads(p.read_text()) for p in sorted(self.guard_dir.glob("trial-*.json"))]

    def __call__(self, path: Path, backend: str) -> Any:
        self.calls.append((backend, self.trials()))
        outer = self

        class Model:
            def transcribe(self, pcm: np.ndarray) -> None:
                assert [t["stage"] for t in outer.trials()] == ["open_model"]
                outer.warm_ups.append(pcm)

        return Model()


def test_a_model_for_a_gpu_loads_and_warms_up_in_a_trial(tmp_path: Path) -> None:
    guard = BackendGuard(tmp_path)
    load = Loads(tmp_path)
    loader = guarded_loader(guard, load, devices=lambda: [CPU, VULKAN1])
    loader(Path("m.gguf"), "auto")
    [(backend, trials)] = load.calls
    assert backend == "auto"
    assert [(t["backend"], t["stage"]) for t in trials] == [("vulkan", BackendStage.OPEN_MODEL.value)]
    [pcm] = load.warm_ups
    assert pcm.dtype == np.float32 and pcm.shape == (round(16000 * WARM_UP_S),) and not pcm.any()
    assert load.trials() == []  # done


def test_a_model_for_the_cpu_loads_without_a_trial(tmp_path: Path) -> None:
    load = Loads(tmp_path)
    loader = guarded_loader(BackendGuard(tmp_path), load, devices=lambda: [CPU, VULKAN1])
    loader(Path("m.gguf"), "cpu")
    assert load.calls == [("cpu", [])] and load.warm_ups == []


@pytest.mark.parametrize(
    ("backend", "devices"),
    [
        ("auto", [CPU, VULKAN1]),  # linked in: its devices are there
        ("vulkan", [CPU]),  # chosen in Preferences before it crashed: its module is not loaded now
        ("Vulkan1", [CPU]),
    ],
)
def test_a_gpu_backend_that_is_off_is_passed_over_for_the_cpu(
    tmp_path: Path, backend: str, devices: list[Device]
) -> None:
    (tmp_path / "crashed.json").write_text(
        json.dumps({"crashes": [{"backend": "vulkan", "stage": "open_model", "when": "2026-12-06T05:30:00"}]})
    )
    load = Loads(tmp_path)
    notices: list[str] = []
    loader = guarded_loader(BackendGuard(tmp_path), load, devices=lambda: devices, notice=notices.append)
    loader(Path("m.gguf"), backend)
    assert load.calls == [("cpu", [])] and load.warm_ups == []
    assert notices == ["Vulkan is off since it crashed Captionist: the model runs on the CPU"]


def test_a_load_that_fails_is_not_a_crash(tmp_path: Path) -> None:
    guard = BackendGuard(tmp_path)

    def refuse(path: Path, backend: str) -> Any:
        raise ValueError("not a model file")

    with pytest.raises(ValueError, match="not a model file"):
        guarded_loader(guard, refuse, devices=lambda: [CPU, VULKAN1])(Path("m.gguf"), "vulkan")
    assert guard.collect() == [] and guard.disabled() == {}


@pytest.mark.slow  # 14 s on lavapipe (2 cores), most of it compiling the shaders
def test_the_real_engine_warms_up_on_vulkan(tmp_path: Path) -> None:
    """The demo model on the first Vulkan device (Mesa's lavapipe here), through the real loader."""
    from captionist import paths
    from captionist.engine import compute_devices

    if not any(d.backend == "Vulkan" for d in compute_devices()):
        pytest.skip("no Vulkan device")
    guard = BackendGuard(tmp_path / "guard")
    model = guarded_loader(guard)(paths.bundled_demo_model(), "vulkan")
    assert model.info["backend"].startswith("Vulkan")
    assert guard.collect() == [] and guard.disabled() == {}
    assert list((tmp_path / "guard").glob("trial-*")) == []
