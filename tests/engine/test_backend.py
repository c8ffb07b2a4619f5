"""Backend choice: the CPU backend variant ggml loads matches this processor, and backend names are
checked (an unknown or unavailable backend is one clear error naming what is available)."""

from __future__ import annotations

import platform
from pathlib import Path

import pytest

from captionist.engine import EngineError, Model

from .cpuinfo import cpuinfo_field


def _ggml_has_cpu_variants() -> bool:
    import libggml

    from captionist.frozen import dynamic_backends

    root = Path(libggml.__file__).parent
    folders = [d for d in root.iterdir() if d.is_dir()]
    return any("ggml-cpu-" in p.name for d in folders for p in dynamic_backends(d))


def test_cpu_backend_reports_its_features(parakeet_eou_tiny_gguf: Path) -> None:
    m = Model(parakeet_eou_tiny_gguf, backend="cpu", n_threads=1)
    assert m.info["backend"] == "CPU"
    assert isinstance(m.info["cpu_features"], str)


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86 instruction sets")
@pytest.mark.skipif(not _ggml_has_cpu_variants(), reason="ggml built without CPU variants (the PyPI wheel)")
def test_the_best_cpu_variant_for_this_processor_is_loaded(parakeet_eou_tiny_gguf: Path) -> None:
    flags = set(cpuinfo_field("flags").split())
    if not flags:
        pytest.skip("no /proc/cpuinfo")
    features = set(Model(parakeet_eou_tiny_gguf, backend="cpu", n_threads=1).info["cpu_features"].split())
    for flag, feature in (("avx2", "AVX2"), ("f16c", "F16C"), ("fma", "FMA"), ("avx512f", "AVX512")):
        if flag in flags:
            assert feature in features, (flag, sorted(features))
    assert "LLAMAFILE" in features


@pytest.mark.parametrize("name", ["nosuchbackend", "vulkan9", "x y", "../cpu"])
def test_unknown_or_unavailable_backend_is_one_clear_error(parakeet_eou_tiny_gguf: Path, name: str) -> None:
    with pytest.raises(EngineError) as e:
        Model(parakeet_eou_tiny_gguf, backend=name, n_threads=1)
    msg = str(e.value)
    assert "\n" not in msg
    assert "backend" in msg and name in msg
