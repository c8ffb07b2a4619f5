"""What the engine reports about the hardware: the devices it can use, and the thread rule."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from captionist import engine
from captionist.engine import DeviceType


def test_compute_devices_lists_the_cpu_with_its_variant() -> None:
    devices = engine.compute_devices()
    cpus = [d for d in devices if d.type is DeviceType.CPU]
    assert len(cpus) == 1
    assert cpus[0].name == "CPU" and cpus[0].backend == "CPU"
    assert cpus[0].cpu_features  # e.g. "SSE3 ... AVX2 ..."
    assert sum(d.is_default for d in devices) == 1
    default = next(d for d in devices if d.is_default)
    # "auto" prefers a GPU when there is one, but never a software rasterizer posing as one
    software = ("llvmpipe", "lavapipe", "swiftshader")
    real_gpus = [
        d
        for d in devices
        if d.type is not DeviceType.CPU and not any(w in d.description.lower() for w in software)
    ]
    assert (default.type is DeviceType.CPU) == (not real_gpus)
    assert not any(w in default.description.lower() for w in software)


def test_every_listed_device_is_a_backend_a_model_loads_on(gguf_path: Callable[[str, str], Path]) -> None:
    for d in engine.compute_devices():
        m = engine.Model(gguf_path("tiny_small", "f32"), backend=d.name.lower(), n_threads=1)
        assert m.info["backend"] == d.name


def test_default_threads_are_bounded_by_cores() -> None:
    n = engine.default_n_threads()
    assert 1 <= n <= max(1, engine._engine_module().physical_cores())


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs CPU affinity (Linux)")
def test_default_threads_follow_the_cpus_this_process_may_use(gguf_path: Callable[[str, str], Path]) -> None:
    # a process pinned to one CPU gets one compute thread, for the model and each new stream
    code = (
        "import os, sys\n"
        "os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})\n"
        "from captionist import engine\n"
        "m = engine.Model(sys.argv[1], backend='cpu')\n"
        "print(engine.default_n_threads(), m.info['n_threads'], int(m.stream().timings()['n_threads']))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(gguf_path("tiny_small", "f32"))],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert out.stdout.split() == ["1", "1", "1"]


def test_explicit_threads_are_kept(gguf_path: Callable[[str, str], Path]) -> None:
    m = engine.Model(gguf_path("tiny_small", "f32"), backend="cpu", n_threads=3)
    assert m.info["n_threads"] == 3
    assert m.stream().timings()["n_threads"] == 3


def test_a_cpu_variant_can_be_forced_for_measuring_it(gguf_path: Callable[[str, str], Path]) -> None:
    """CAPTIONIST_CPU_VARIANT loads that CPU module (benchmarks compare AVX2 with AVX-512 so)."""
    import libggml  # the wheel's modules: a build with runtime dispatch has one per variant

    lib = Path(libggml.__file__).parent / "lib"
    if not (lib / "libggml-cpu-haswell.so").exists():
        pytest.skip("this ggml build has no per-variant CPU modules")
    code = (
        "import sys\n"
        "from captionist import engine\n"
        "print(engine.Model(sys.argv[1], backend='cpu').info['cpu_features'])\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "CAPTIONIST_CPU_VARIANT": "haswell"}
    out = subprocess.run(
        [sys.executable, "-c", code, str(gguf_path("tiny_small", "f32"))],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    features = out.stdout.split()
    assert "AVX2" in features and "AVX512" not in features, features
