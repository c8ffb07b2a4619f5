"""Our few-column CPU product kernels (engine/src/column_kernels.h): ggml's products, computed
faster, for every shape and split over threads; streams that read F16 and Q8_0 weights through
them stay as close to F32 as ggml's own products keep them."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from captionist import _engine, engine
from captionist.convert import convert_checkpoint

from .conftest import load_clip
from .cpuinfo import CPUINFO, cpuinfo_field
from .fastconformer_fixtures import clip, source

# the levels this CPU runs, best first, and the most columns each takes per weight type
FOUND = _engine.column_kernel_levels()
MAX_COLUMNS = {(lv["name"], kind): lv[f"{kind}_max_columns"] for lv in FOUND for kind in ("f16", "q8_0")}
LEVELS: list[str] = [lv["name"] for lv in FOUND]
# the fewest columns they take in this process (1 on Intel CPUs, else 2)
MIN_COLUMNS = FOUND[0]["min_columns"] if FOUND else 2

pytestmark = pytest.mark.skipif(not LEVELS, reason="this CPU has no level of our column kernels")

# (rows, k): rows past the 4- and 2-row tiles; k with F16 tails (16, 8) and Q8_0 blocks past the
# groups of 8 (nb = 3, 9, 40)
F16_SHAPES = [(1, 16), (5, 33), (37, 100), (130, 1280)]
Q8_SHAPES = [(1, 32), (5, 96), (37, 288), (130, 1280)]


def product(w: np.ndarray, x: np.ndarray, kind: str, level: str, threads: int = 1) -> np.ndarray:
    out, _ = _engine.weight_product(w, x, kind, level, threads)
    return np.asarray(out, dtype=np.float64)


def magnitude(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    """sum_k |x_jk w_ik| for each output: the scale of its rounding errors."""
    return np.abs(x.astype(np.float64)) @ np.abs(w.astype(np.float64)).T


def data(rows: int, k: int, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    w = (rng.standard_normal((rows, k)) * rng.uniform(0.01, 2.0, (rows, 1))).astype(np.float32)
    x = (rng.standard_normal((n, k)) * rng.uniform(0.1, 10.0, (n, 1))).astype(np.float32)
    return w, x


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize(("kind", "shapes"), [("f16", F16_SHAPES), ("q8_0", Q8_SHAPES)])
def test_kernels_give_ggmls_products(level: str, kind: str, shapes: list[tuple[int, int]]) -> None:
    """The same integer block dots and roundings as ggml_mul_mat; only the order of the F32 sums
    differs, so every output agrees to a few F32 roundings of its terms."""
    for rows, k in shapes:
        for n in range(MIN_COLUMNS, MAX_COLUMNS[level, kind] + 1):
            w, x = data(rows, k, n, seed=rows * 1000 + k + n)
            want = product(w, x, kind, "ggml")
            for threads in (1, 2, 3):
                got = product(w, x, kind, level, threads)
                err = np.abs(got - want) / magnitude(w, x)
                assert err.max() < 1e-5, (rows, k, n, threads, float(err.max()))


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("kind", ["f16", "q8_0"])
def test_kernels_read_attentions_views(level: str, kind: str) -> None:
    """Attention's products: per head (keys or values broadcast to query heads, as with grouped
    queries), the cache a window of taller tensors, the queries a permuted view."""
    rng = np.random.default_rng(3)
    for w_heads, heads, rows, k, n in [(4, 4, 37, 64, 4), (2, 8, 64, 96, 3), (1, 3, 5, 32, 2)]:
        w = rng.standard_normal((w_heads, rows, k)).astype(np.float32)
        x = rng.standard_normal((heads, n, k)).astype(np.float32)
        want, _ = _engine.weight_product(w, x, kind, "ggml")
        for threads in (1, 3):
            got, _ = _engine.weight_product(w, x, kind, level, threads, views=True)
            scale = np.stack([magnitude(w[h * w_heads // heads], x[h]) for h in range(heads)])
            err = np.abs(np.asarray(got, dtype=np.float64) - want) / scale
            assert err.max() < 1e-5, (w_heads, heads, rows, k, n, threads, float(err.max()))


def round_f16(a: np.ndarray) -> np.ndarray:
    return a.astype(np.float16).astype(np.float64)


def q8_0(a: np.ndarray) -> np.ndarray:
    """Q8_0 in float64: blocks of 32 with d = amax / 127 (kept as F16) and rounded quotients."""
    blocks = a.astype(np.float64).reshape(*a.shape[:-1], -1, 32)
    amax = np.abs(blocks).max(axis=-1, keepdims=True)
    d = amax / 127
    q = np.round(np.divide(blocks, d, out=np.zeros_like(blocks), where=d > 0))
    return (q * round_f16(d)).reshape(a.shape)


@pytest.mark.parametrize("level", LEVELS)
def test_kernels_compute_the_quantized_product(level: str) -> None:
    """Against numpy, independently of ggml: F16 weights times the columns rounded to F16, Q8_0
    weights times the columns quantized to Q8_0."""
    w, x = data(70, 320, 4, seed=7)
    f16 = product(w, x, "f16", level, 2)
    want = round_f16(x) @ round_f16(w).T
    assert (np.abs(f16 - want) / magnitude(w, x)).max() < 1e-5
    q8 = product(w, x, "q8_0", level, 2)
    want = q8_0(x) @ q8_0(w).T
    # numpy rounds the quotients from x / d, ggml from x * (1 / d): an odd value may land one
    # step apart, a few thousandths of its term
    assert (np.abs(q8 - want) / magnitude(w, x)).max() < 1e-3
    assert (np.abs(q8 - x.astype(np.float64) @ w.astype(np.float64).T) / magnitude(w, x)).max() > 1e-5


def test_kernels_refuse_what_they_do_not_take() -> None:
    if MIN_COLUMNS > 1:
        w, x = data(8, 64, 1, seed=1)
        with pytest.raises(ValueError, match="do not take this shape"):
            _engine.weight_product(w, x, "f16", LEVELS[0])
    w, x = data(8, 64, MAX_COLUMNS[LEVELS[0], "q8_0"] + 1, seed=1)
    with pytest.raises(ValueError, match="do not take this shape"):
        _engine.weight_product(w, x, "q8_0", LEVELS[0])
    with pytest.raises(ValueError, match="multiple of its block size"):
        _engine.weight_product(*data(8, 48, 4, seed=1), "q8_0", LEVELS[0])
    with pytest.raises(ValueError, match="cannot run"):
        _engine.weight_product(*data(8, 64, 4, seed=1), "f16", "sse2")


@pytest.mark.skipif(not CPUINFO.exists(), reason="reads the CPU's vendor from /proc/cpuinfo")
def test_one_column_goes_to_the_kernels_on_intel_only_unless_told() -> None:
    """A decoder step's one-column products take the kernels on Intel CPUs (where ggml's one-row
    loop stalls), ggml's loop elsewhere; CAPTIONIST_ONE_COLUMN decides for the whole process."""
    code = """
import numpy as np
from captionist import _engine
level = _engine.column_kernel_levels()[0]
w, x = np.ones((8, 64), np.float32), np.ones((1, 64), np.float32)
before = _engine.column_product_count()
try:
    out, _ = _engine.weight_product(w, x, "f16", level["name"])
    taken = bool(np.all(np.asarray(out) == 64.0)) and _engine.column_product_count() > before
except ValueError:
    taken = False
print(level["min_columns"], taken)
"""
    want = {None: 1 if cpuinfo_field("vendor_id") == "GenuineIntel" else 2, "ours": 1, "ggml": 2}
    for value, minimum in want.items():
        env = {k: v for k, v in os.environ.items() if k != "CAPTIONIST_ONE_COLUMN"}
        if value is not None:
            env["CAPTIONIST_ONE_COLUMN"] = value
        got = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        assert got.stdout.split() == [str(minimum), str(minimum == 1)], (value, got.stdout, got.stderr)


def test_models_report_and_obey_the_choice(
    monkeypatch: pytest.MonkeyPatch, gguf_path: Callable[[str, str], Path]
) -> None:
    path = gguf_path("tiny_small", "f16")
    assert engine.Model(path, backend="cpu").info["column_kernels"] == LEVELS[0]
    monkeypatch.setenv("CAPTIONIST_COLUMN_KERNELS", "0")
    assert engine.Model(path, backend="cpu").info["column_kernels"] == ""
    monkeypatch.setenv("CAPTIONIST_COLUMN_KERNELS", LEVELS[-1])
    assert engine.Model(path, backend="cpu").info["column_kernels"] == LEVELS[-1]


def voxtral_captures(path: Path) -> dict[str, np.ndarray]:
    """A live stream's intermediates: 80 ms feeds, so the encoder multiplies its weights by 4 frames
    at a time (the kernels' case)."""
    m = engine.Model(path, backend="cpu", n_threads=2)
    s = _engine.Stream(m._m, latency_ms=480, stop_at_end_of_utterance=True, capture=True)
    pcm = load_clip("speech_short.wav")
    for i in range(0, len(pcm), 1280):
        s.feed(pcm[i : i + 1280])
    s.finish()
    return {k: np.asarray(v, dtype=np.float64) for k, v in s.captured().items()}


def rms(a: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(a))))


def check_kernels_like_ggml(
    exact: np.ndarray, run: Callable[[], np.ndarray], monkeypatch: pytest.MonkeyPatch, near: float
) -> None:
    """Through the kernels (which must run) as close to F32 as through ggml's products, and within
    `near` of their error from ggml's products. The kernels add in another order, so results
    differ in their last bits; where those are rounded again (Q8_0 quantizes each layer's
    activations; attention with an F16 cache rounds the queries and the probabilities to F16), a
    few values move by a whole rounding step, and the tiny random models pass that on."""
    before = _engine.column_product_count()
    kernels = run()
    assert _engine.column_product_count() > before
    monkeypatch.setenv("CAPTIONIST_COLUMN_KERNELS", "0")
    before = _engine.column_product_count()
    plain = run()
    assert _engine.column_product_count() == before
    monkeypatch.delenv("CAPTIONIST_COLUMN_KERNELS")
    quant_error = rms(plain - exact)
    assert 0 < quant_error < 0.5 * rms(exact)
    assert rms(kernels - exact) <= 1.05 * quant_error
    assert rms(kernels - plain) <= near * quant_error


@pytest.mark.parametrize("kind", ["f16", "Q8_0"])
def test_voxtral_streams_through_the_kernels(
    kind: str, monkeypatch: pytest.MonkeyPatch, gguf_path: Callable[[str, str], Path]
) -> None:
    exact = voxtral_captures(gguf_path("tiny_wide", "f32"))["enc_out"]
    path = gguf_path("tiny_wide", kind)
    check_kernels_like_ggml(exact, lambda: voxtral_captures(path)["enc_out"], monkeypatch, 0.6)


def fc_encoder_out(path: Path, model: str) -> np.ndarray:
    """The encoder output at the model's longest latency (several frames per chunk)."""
    m = engine.Model(path, backend="cpu", n_threads=2)
    s = _engine.Stream(m._m, latency_ms=m.info["latencies_ms"][-1], capture=True)
    s.feed(clip(model, "speech_long"))
    s.finish()
    return np.asarray(s.captured()["encoder_out"], dtype=np.float64)


@pytest.mark.parametrize("model", ["nemotron_tiny", "parakeet_eou_tiny"])
def test_fastconformer_streams_through_the_kernels(
    model: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fc_f32: Callable[[str], Path]
) -> None:
    path = tmp_path / "f16.gguf"
    convert_checkpoint(source(model), path, "f16", progress=False)
    exact = fc_encoder_out(fc_f32(model), model)
    check_kernels_like_ggml(exact, lambda: fc_encoder_out(path, model), monkeypatch, 0.1)
