"""`quantize` rewrites matrices with ggml's routines; the values decode back close to the source."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from gguf import GGMLQuantizationType as Q
from gguf import GGUFReader
from gguf.quants import dequantize

from captionist import engine
from captionist.engine import EngineError


def tensors(path: Path) -> dict[str, tuple[Q, np.ndarray]]:
    out = {}
    for t in GGUFReader(path).tensors:
        shape = [int(x) for x in t.shape][::-1]
        out[t.name] = (t.tensor_type, dequantize(np.array(t.data), t.tensor_type).reshape(shape))
    return out


@pytest.mark.parametrize(
    ("kind", "main_type", "rel_rms"),
    [("Q8_0", Q.Q8_0, 0.01), ("Q5_K", Q.Q5_K, 0.05), ("Q4_K", Q.Q4_K, 0.1), ("Q6_K", Q.Q6_K, 0.03)],
)
def test_quantized_values(
    gguf_path: Callable[[str, str], Path], kind: str, main_type: Q, rel_rms: float
) -> None:
    src = tensors(gguf_path("tiny_wide", "f32"))
    dst = tensors(gguf_path("tiny_wide", kind))
    assert src.keys() == dst.keys()
    assert dst["dec.blk.0.ffn_gate.weight"][0] == main_type  # rows of 256: fits every type
    for name, (qtype, values) in dst.items():
        ref = src[name][1]
        if name.startswith("audio.") or "norm" in name or name.endswith(".bias") or "ada_" in name:
            assert qtype == Q.F32, name
            np.testing.assert_array_equal(values, ref)
            continue
        if "conv" in name:
            assert qtype == Q.F32, name
            continue
        if ref.shape[-1] % 256:
            assert qtype in (Q.Q8_0, Q.F16), f"{name}: rows of {ref.shape[-1]} must fall back"
        err = np.sqrt(np.mean((values - ref) ** 2)) / np.sqrt(np.mean(ref**2))
        assert err < rel_rms, f"{name}: relative RMS error {err:.4f}"


def test_q4_k_m_mix(gguf_path: Callable[[str, str], Path]) -> None:
    types = {n: t for n, (t, _) in tensors(gguf_path("tiny_wide", "Q4_K_M")).items()}
    assert types["dec.token_embd.weight"] == Q.Q6_K
    assert types["dec.blk.0.attn_v.weight"] == Q.Q6_K
    assert types["dec.blk.0.ffn_gate.weight"] == Q.Q4_K
    assert types["dec.blk.1.ffn_up.weight"] == Q.Q4_K


def test_bad_type_and_bad_source_leave_nothing(tmp_path: Path, gguf_path: Callable[[str, str], Path]) -> None:
    out = tmp_path / "out.gguf"
    with pytest.raises(ValueError, match="unknown quantization type 'Q3_X'"):
        engine.quantize(gguf_path("tiny_small", "f32"), out, "Q3_X")
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(gguf_path("tiny_small", "f32").read_bytes()[:5000])
    with pytest.raises(EngineError, match="truncated|corrupt"):
        engine.quantize(bad, out, "Q8_0")
    assert list(tmp_path.iterdir()) == [bad]


def test_progress_is_reported(tmp_path: Path, gguf_path: Callable[[str, str], Path]) -> None:
    seen: list[tuple[int, int]] = []
    engine.quantize(
        gguf_path("tiny_small", "f32"), tmp_path / "q.gguf", "Q8_0", progress=lambda d, t: seen.append((d, t))
    )
    assert (
        seen
        and seen[-1][0] == seen[-1][1]
        and all(a <= b for (a, _), (b, _) in zip(seen, seen[1:], strict=False))
    )
