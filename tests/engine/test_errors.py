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
    with pytest.raises(EngineError, match="backend 'tpu' is not available in this ggml build"):
        engine.Model(good, backend="tpu")
    with pytest.raises(TypeError, match="backend must be a str"):
        engine.Model(good, backend=3)  # type: ignore[arg-type]
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


def test_model_path_with_a_nul_byte_is_refused(good: Path) -> None:
    with pytest.raises(EngineError, match="NUL byte"):
        engine.Model(str(good) + "\0ignored")


@pytest.mark.parametrize("kind", ["directory", "fifo", "device"])
def test_model_path_must_be_a_regular_file(tmp_path: Path, kind: str) -> None:
    """Checked before opening: a FIFO used to block the loader forever (run in a child with a timeout)."""
    import os
    import subprocess
    import sys

    path = {"directory": tmp_path, "fifo": tmp_path / "fifo", "device": Path("/dev/zero")}[kind]
    if kind == "fifo":
        os.mkfifo(path)
    code = (
        "import sys\nfrom captionist import engine\n"
        "try:\n    engine.Model(sys.argv[1], backend='cpu', n_threads=1)\n"
        "except engine.EngineError as e:\n    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert f"model path '{path}' is not a regular file" in out.stdout


@pytest.mark.parametrize("n_threads", [0, -1, 257, 2**31 - 1])
def test_n_threads_is_bounded(good: Path, n_threads: int) -> None:
    with pytest.raises(ValueError, match="n_threads must be 1 to 256"):
        engine.Model(good, backend="cpu", n_threads=n_threads)
    import captionist._engine as raw

    if n_threads != 0:  # 0 is the raw engine's "one per physical core"
        with pytest.raises(ValueError, match=r"n_threads must be 0 \(one per physical core\) or 1 to 256"):
            raw.Model(str(good), "cpu", n_threads)


def test_n_threads_at_the_bound_loads(good: Path) -> None:
    assert engine.Model(good, backend="cpu", n_threads=256).info["n_threads"] == 256


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda raw, p, m: raw.Model(p, "cpu", 1.5), "n_threads must be an int, got float"),
        (lambda raw, p, m: raw.Model(p, "cpu", "2"), "n_threads must be an int, got str"),
        (lambda raw, p, m: raw.Model(p, 3, 1), "backend must be a str, got int"),
        (lambda raw, p, m: raw.Model(5), "path must be a str, got int"),
        (lambda raw, p, m: raw.Stream(m, 480.0), "latency_ms must be an int, got float"),
        (lambda raw, p, m: raw.Stream(m, 480, 3), "language must be a str, got int"),
        (lambda raw, p, m: raw.Stream(m, 480, "", 1), "stop_at_end_of_utterance must be a bool, got int"),
        (lambda raw, p, m: raw.Stream("model", 480), "model must be a captionist._engine.Model, got str"),
        (lambda raw, p, m: raw.Stream(m).reset("480"), "latency_ms must be an int, got str"),
        (lambda raw, p, m: m.token_bytes(1.0), "id must be an int, got float"),
        (lambda raw, p, m: raw.quantize(p, p + ".q", "Q8_0", 0.5), "n_threads must be an int, got float"),
        (lambda raw, p, m: engine.Model(p, n_threads=2.0), "n_threads must be an int or None, got float"),
        (lambda raw, p, m: engine.Model(None), "path must be a str or Path, got NoneType"),
    ],
)
def test_wrong_argument_types_are_one_line_type_errors(
    good: Path, model: engine.Model, call: Callable[..., object], message: str
) -> None:
    import captionist._engine as raw

    with pytest.raises(TypeError) as err:
        call(raw, str(good), model._m)
    assert str(err.value) == message


def test_out_of_range_integers_are_value_errors(model: engine.Model) -> None:
    import captionist._engine as raw

    with pytest.raises(ValueError, match=r"latency_ms = 4294967296 is outside"):
        raw.Stream(model._m, 2**32)
    with pytest.raises(ValueError, match=r"n_threads = 300 is outside \[0, 256\]"):
        raw.quantize("a", "b", "Q8_0", 300)
