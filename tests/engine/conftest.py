"""Engine test fixtures: the reference tiny models converted (once per session) to our GGUFs."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile

from captionist import engine
from captionist.convert import convert_checkpoint
from captionist.engine import DeviceType
from tools.compare_node_dumps import NodeRecord, read_dump
from tools.dump_stream_nodes import dump_stream

DATA = Path(__file__).resolve().parent.parent / "data"
REFERENCE = DATA / "reference"
AUDIO = DATA / "audio"
MODELS = ("tiny_wide", "tiny_small")


def accelerators() -> list[str]:
    """The names of this build's non-CPU devices (Vulkan on lavapipe in CI)."""
    try:
        return [d.name for d in engine.compute_devices() if d.type is not DeviceType.CPU]
    except Exception:  # no engine built: the rest of the suite reports that
        return []


DEVICES = accelerators()
# parametrize over this: each device, or one skipped case where the build has none
DEVICE_PARAMS = DEVICES or [
    pytest.param("none", marks=pytest.mark.skip(reason="this ggml build has no non-CPU device"))
]


def load_expected(model: str) -> dict[str, Any]:
    return json.loads((REFERENCE / model / "expected.json").read_text())


def load_clip(name: str) -> np.ndarray:
    pcm, rate = soundfile.read(AUDIO / name, dtype="float32")
    assert rate == engine.SAMPLE_RATE
    return pcm


@pytest.fixture(scope="session")
def gguf_path(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, str], Path]:
    """gguf_path(model, kind) -> a converted file; kind: f32, f16, bf16 or a quantization type."""
    root = tmp_path_factory.mktemp("gguf")
    made: dict[tuple[str, str], Path] = {}

    def make(model: str, kind: str) -> Path:
        key = (model, kind)
        if key not in made:
            out = root / f"{model}.{kind}.gguf"
            if kind in ("f32", "f16", "bf16"):
                convert_checkpoint(REFERENCE / model / "hf", out, kind, progress=False)
            else:
                engine.quantize(make(model, "f32"), out, kind)
            made[key] = out
        return made[key]

    return make


@pytest.fixture(scope="session")
def fc_f32(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """fc_f32(model) -> a FastConformer fixture (tests/data/fastconformer) converted to F32 once."""
    from .fastconformer_fixtures import expected, source

    root = tmp_path_factory.mktemp("fc_f32")

    def make(model: str) -> Path:
        out = root / f"{model}.gguf"
        if not out.exists():
            expected(model)  # skips when the fixture is not committed
            convert_checkpoint(source(model), out, "f32", progress=False)
        return out

    return make


@pytest.fixture(scope="session")
def loaded(gguf_path: Callable[[str, str], Path]) -> Callable[[str, str], engine.Model]:
    cache: dict[tuple[str, str], engine.Model] = {}

    def get(model: str, kind: str = "f32") -> engine.Model:
        if (model, kind) not in cache:
            cache[(model, kind)] = engine.Model(gguf_path(model, kind), backend="cpu", n_threads=2)
        return cache[(model, kind)]

    return get


@pytest.fixture(scope="session")
def fixture_ggufs(
    tmp_path_factory: pytest.TempPathFactory, gguf_path: Callable[[str, str], Path]
) -> dict[str, Path]:
    """One small F32 file per family and layout: Voxtral (tiny_small), Parakeet-EOU, Nemotron 3.5 (prompt)."""
    from .fastconformer_fixtures import source

    root = tmp_path_factory.mktemp("fixture_ggufs")
    out = {"voxtral": gguf_path("tiny_small", "f32")}
    for name, model in (("parakeet", "parakeet_eou_tiny"), ("nemotron35", "nemotron35_tiny")):
        out[name] = root / f"{model}.f32.gguf"
        convert_checkpoint(source(model), out[name], "f32", progress=False)
    return out


def load_and_run(path: Path, n_samples: int = 3200) -> None:
    """Load `path` on one CPU thread and stream `n_samples` of low noise through it to the end."""
    m = engine.Model(path, backend="cpu", n_threads=1)
    s = m.stream()
    s.feed((np.random.default_rng(0).standard_normal(n_samples) * 0.01).astype(np.float32))
    s.finish()


def speechy(seconds: float, seed: int = 0) -> np.ndarray:
    """A voiced, gated tone with a little noise: enough structure for the models to emit tokens."""
    rng = np.random.default_rng(seed)
    sr = engine.SAMPLE_RATE
    t = np.arange(int(sr * seconds)) / sr
    tone = np.sin(2 * np.pi * (180 + 60 * np.sin(2 * np.pi * 0.7 * t)) * t)
    return (0.3 * tone * (np.sin(2 * np.pi * 2.5 * t) > 0) + 0.02 * rng.standard_normal(t.size)).astype(
        np.float32
    )


@pytest.fixture(scope="session")
def device_dumps(
    gguf_path: Callable[[str, str], Path],
    fc_f32: Callable[[str], Path],
    tmp_path_factory: pytest.TempPathFactory,
) -> Callable[[str, str, str, str], list[NodeRecord]]:
    """device_dumps(family, kind, backend, flash) -> the nodes of a 2 s stream's first 12 graph computes
    (tools/dump_stream_nodes.py), the engine choosing the cache type itself, and flash attention too
    where `flash` is "" ("0" / "1" force it off / on). Shared by the CUDA and Metal rule checks."""
    root = tmp_path_factory.mktemp("device_dumps")
    made: dict[tuple[str, str, str, str], list[NodeRecord]] = {}

    def model(family: str, kind: str) -> Path:
        if family == "voxtral":
            return gguf_path("tiny_small", kind if kind in ("f32", "f16") else kind.upper())
        out = root / f"fc.{kind}.gguf"
        if kind == "f32":
            return fc_f32("nemotron_tiny_ctx")
        if not out.exists():
            engine.quantize(fc_f32("nemotron_tiny_ctx"), out, kind.upper())
        return out

    def get(family: str, kind: str, backend: str, flash: str) -> list[NodeRecord]:
        key = (family, kind, backend, flash)
        if key not in made:
            out = root / f"{family}.{kind}.{backend}.{flash or 'auto'}.nodes"
            path = model(family, kind)
            rc = dump_stream(
                path, out, backend, computes=12, seconds=2.0, flash=flash, kv_type="", timeout=600
            )
            assert rc == 0
            made[key] = read_dump(out)
        return made[key]

    return get
