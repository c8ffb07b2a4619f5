"""Bad model files and bad inputs give a clear error and never crash the process."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from captionist import engine
from captionist.engine import EngineError

from .gguf_edit import rewrite_gguf


@pytest.fixture(scope="module")
def good(gguf_path: Callable[[str, str], Path]) -> Path:
    return gguf_path("tiny_small", "f32")


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(EngineError, match="cannot open model file"):
        engine.Model(tmp_path / "nope.gguf")


def test_not_a_gguf(tmp_path: Path) -> None:
    p = tmp_path / "x.gguf"
    p.write_bytes(b"RIFF" + bytes(1000))
    with pytest.raises(EngineError, match="not a GGUF"):
        engine.Model(p)


@pytest.mark.parametrize("keep", [0.05, 0.5, 0.999])
def test_truncated_file(tmp_path: Path, good: Path, keep: float) -> None:
    data = good.read_bytes()
    p = tmp_path / "cut.gguf"
    p.write_bytes(data[: int(len(data) * keep)])
    with pytest.raises(EngineError, match="truncated|corrupt"):
        engine.Model(p)


def test_wrong_architecture(tmp_path: Path, good: Path) -> None:
    p = rewrite_gguf(good, tmp_path / "llama.gguf", set_kv={"general.architecture": "llama"})
    with pytest.raises(EngineError, match="architecture 'llama'"):
        engine.Model(p)


def test_missing_tensor(tmp_path: Path, good: Path) -> None:
    p = rewrite_gguf(good, tmp_path / "drop.gguf", drop=("dec.blk.1.ffn_up.weight",))
    with pytest.raises(EngineError, match="missing the tensor 'dec.blk.1.ffn_up.weight'"):
        engine.Model(p)


def test_shape_mismatch(tmp_path: Path, good: Path) -> None:
    p = rewrite_gguf(good, tmp_path / "shape.gguf", set_kv={"voxtral.decoder.n_ff": 96})
    with pytest.raises(EngineError, match="has shape .* but the hyper-parameters need"):
        engine.Model(p)


def test_missing_hyperparameter(tmp_path: Path, good: Path) -> None:
    from gguf import GGUFReader

    fields = {k for k in GGUFReader(good).fields if not k.startswith("GGUF.")}
    assert "voxtral.encoder.sliding_window" in fields
    p = rewrite_gguf(good, tmp_path / "nokey.gguf", set_kv={"voxtral.encoder.sliding_window": 0})
    with pytest.raises(EngineError, match=r"'voxtral.encoder.sliding_window' = 0 is outside \[1, 65536\]"):
        engine.Model(p)


def test_unknown_and_absent_backends(good: Path) -> None:
    with pytest.raises(ValueError, match="backend must be"):
        engine.Model(good, backend="tpu")
    import captionist._engine as raw

    with pytest.raises(EngineError, match="not available in this ggml build"):
        raw.Model(str(good), "cuda", 1)


@pytest.fixture(scope="module")
def model(good: Path) -> engine.Model:
    return engine.Model(good, backend="cpu", n_threads=1)


@pytest.mark.parametrize(
    ("pcm", "message"),
    [
        (np.zeros(1600, np.float64), "float32"),
        (np.zeros((1600, 2), np.float32), "1-D"),
        (np.zeros(0, np.float32), "empty"),
        (np.array([0.0, np.nan, 0.0], np.float32), "sample 1 is not a finite"),
        (np.array([np.inf], np.float32), "not a finite"),
        ([0.0, 0.1], "numpy array"),
    ],
)
def test_bad_audio(model: engine.Model, pcm: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        model.transcribe(pcm)  # type: ignore[arg-type]


@pytest.mark.parametrize("delay_ms", [0, 40, 100, 1280, 2320, 4800, -80])
def test_bad_delay(model: engine.Model, delay_ms: int) -> None:
    with pytest.raises(ValueError, match="is not supported by this model"):
        model.transcribe(np.zeros(1600, np.float32), delay_ms=delay_ms)


def test_raw_engine_rejects_nan_without_changing_the_stream(model: engine.Model) -> None:
    import captionist._engine as raw

    s = raw.Stream(model._m, latency_ms=480)
    with pytest.raises(ValueError, match="not a finite"):
        s.feed(np.array([0.0, np.nan], np.float32))
    with pytest.raises(ValueError, match="float32"):
        s.feed(np.zeros(10, np.int16))
    with pytest.raises(ValueError, match="not supported by this model"):
        s.reset(31 * 80)
    with pytest.raises(ValueError, match="takes no language"):
        s.reset(480, "de")


def test_feed_after_finish(model: engine.Model) -> None:
    s = model.stream()
    s.feed(np.zeros(3200, np.float32))
    s.finish()
    with pytest.raises(EngineError, match="finished"):
        s.feed(np.zeros(10, np.float32))
    assert s.finish().new_tokens == []
