"""FastConformer files at 16 bits (F16, BF16: the F32 weights rounded two ways) stay close to F32.

BF16 keeps 8 mantissa bits to F16's 11, and its products also round the activations to BF16 (ggml
multiplies BF16 weights by BF16 activations), so its bound is looser; it is the faster format on
CPUs with BF16 dot products (bench/README.md)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from captionist import _engine, engine
from captionist.convert import convert_checkpoint

from .fastconformer_fixtures import clip, source

# outtype -> largest RMS error of the encoder output, relative to its RMS
BOUNDS = {"f16": 2e-3, "bf16": 2e-2}


def encoder_out(path: Path, model: str) -> np.ndarray:
    m = engine.Model(path, backend="cpu", n_threads=1)
    s = _engine.Stream(m._m, latency_ms=m.info["latencies_ms"][0], capture=True)
    s.feed(clip(model, "speech_long"))
    s.finish()
    return np.asarray(s.captured()["encoder_out"], dtype=np.float64)


@pytest.mark.parametrize("outtype", list(BOUNDS))
@pytest.mark.parametrize("model", ["nemotron_tiny", "parakeet_eou_tiny"])
def test_16_bit_files_stay_close_to_f32(
    tmp_path: Path, fc_f32: Callable[[str], Path], model: str, outtype: str
) -> None:
    path = tmp_path / f"{outtype}.gguf"
    convert_checkpoint(source(model), path, outtype, progress=False)
    types = engine.Model(path, backend="cpu").info["tensor_types"]
    assert types.get(outtype, 0) > 0, types
    exact = encoder_out(fc_f32(model), model)
    ours = encoder_out(path, model)
    rel = np.sqrt(np.mean((ours - exact) ** 2)) / np.sqrt(np.mean(exact**2))
    assert 0 < rel < BOUNDS[outtype], rel
