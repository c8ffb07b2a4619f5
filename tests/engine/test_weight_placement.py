"""Where the weights live: mapped from the file on the CPU, and matrices repacked for ggml's faster
CPU kernels where it has them. Neither may change what a model transcribes."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from captionist import _engine, engine

from .conftest import load_clip

CLIP = "speech_mid.wav"


def ids(m: engine.Model) -> list[int]:
    return list(m.transcribe(load_clip(CLIP)).token_ids)


def test_weights_are_mapped_on_the_cpu_unless_asked_not_to(gguf_path: Callable[[str, str], Path]) -> None:
    path = gguf_path("tiny_wide", "f32")
    mapped = engine.Model(path, backend="cpu", n_threads=1)
    read = engine.Model(path, backend="cpu", n_threads=1, mmap=False)
    assert mapped.info["weights_mapped"] is True
    assert read.info["weights_mapped"] is False
    assert mapped.info["repacked_tensors"] == 0  # F32: nothing for the repacked kernels
    assert mapped.info["weight_bytes"] == pytest.approx(read.info["weight_bytes"], abs=256)
    assert ids(mapped) == ids(read)
    assert len(ids(mapped)) > 3


def test_mapped_model_keeps_working_when_its_file_is_replaced_or_deleted(
    tmp_path: Path, gguf_path: Callable[[str, str], Path]
) -> None:
    # A re-download replaces the file by rename while a session runs; the mapping keeps the old one.
    path = tmp_path / "model.gguf"
    shutil.copyfile(gguf_path("tiny_wide", "f32"), path)
    m = engine.Model(path, backend="cpu", n_threads=1)
    before = ids(m)
    other = tmp_path / "other.gguf"
    shutil.copyfile(gguf_path("tiny_small", "f32"), other)
    os.replace(other, path)
    assert ids(m) == before
    path.unlink()
    assert ids(m) == before


def test_env_switch_turns_mapping_off(
    monkeypatch: pytest.MonkeyPatch, gguf_path: Callable[[str, str], Path]
) -> None:
    monkeypatch.setenv("CAPTIONIST_NO_MMAP", "1")
    m = engine.Model(gguf_path("tiny_wide", "f32"), backend="cpu", n_threads=1)
    assert m.info["weights_mapped"] is False


def test_mmap_argument_must_be_a_bool(gguf_path: Callable[[str, str], Path]) -> None:
    with pytest.raises(TypeError, match="mmap must be a bool"):
        engine.Model(gguf_path("tiny_wide", "f32"), mmap="no")  # type: ignore[arg-type]


def rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(x, dtype=np.float64))))


def captured(
    path: Path, latency_ms: int = 480, **model_args: Any
) -> tuple[dict[str, np.ndarray], engine.Model]:
    """Every intermediate of a stream over speech_short.wav, and its model (2 threads unless given)."""
    m = engine.Model(path, backend="cpu", **{"n_threads": 2, **model_args})
    s = _engine.Stream(m._m, latency_ms=latency_ms, stop_at_end_of_utterance=True, capture=True)
    s.feed(load_clip("speech_short.wav"))
    s.finish()
    return {k: np.asarray(v) for k, v in s.captured().items()}, m


def check_repacked_like_plain(
    f32: Path,
    q4k: Path,
    key: str,
    latency_ms: int,
    monkeypatch: pytest.MonkeyPatch,
    rows: int | None = None,
    max_quant_error: float = 0.5,
) -> None:
    """The repacked kernels quantize the activations in their own blocks, so the result is not
    bit-identical: it must be as close to F32 as the plain Q4_K kernels are, and far closer to them
    than either is to F32 (a wrong layout would be off by the size of the values). `rows`: compare
    only the first rows captured (later ones may follow different ids); `max_quant_error`: how far
    Q4_K may be from F32 at all, relative to the values (the tiny model's logits amplify it)."""
    exact = captured(f32, latency_ms)[0][key]
    repacked_all, m_rep = captured(q4k, latency_ms)
    repacked = repacked_all[key]
    monkeypatch.setenv("CAPTIONIST_NO_REPACK", "1")
    plain_all, m_plain = captured(q4k, latency_ms)
    plain = plain_all[key]
    monkeypatch.delenv("CAPTIONIST_NO_REPACK")
    if rows is not None:
        exact, repacked, plain = exact[:rows], repacked[:rows], plain[:rows]
    assert m_rep.info["repacked_tensors"] > 0
    assert m_plain.info["repacked_tensors"] == 0
    assert m_rep.info["weights_mapped"] is True  # the rest still comes from the mapping
    quant_error = rms(plain - exact)
    assert 0 < quant_error < max_quant_error * rms(exact)
    assert rms(repacked - exact) <= 1.05 * quant_error
    assert rms(repacked - plain) <= 0.1 * quant_error


def test_voxtral_q4_k_matrices_are_repacked(
    monkeypatch: pytest.MonkeyPatch, gguf_path: Callable[[str, str], Path]
) -> None:
    q4k = gguf_path("tiny_wide", "Q4_K")
    m = engine.Model(q4k, backend="cpu", n_threads=1)
    # Q4_K matrices whose rows come in eights; never the token embedding itself, which get_rows
    # also reads: the output head tied to it gets a repacked twin instead
    assert m.info["product_twins"] == 1
    assert 0 < m.info["repacked_tensors"] - m.info["product_twins"] < m.info["tensor_types"]["q4_K"]
    check_repacked_like_plain(gguf_path("tiny_wide", "f32"), q4k, "enc_out", 480, monkeypatch)


@pytest.mark.parametrize("kind", ["Q8_0", "Q4_K"])
def test_no_weight_takes_the_amx_layout(gguf_path: Callable[[str, str], Path], kind: str) -> None:
    """ggml's AMX layout (Intel Xeon 4th generation on) would take Q8_0 and Q4_K matrices, and its
    GCC 12 build stops the process with SIGILL at the first product (backend_registry.cpp). Every
    repacked weight is in a layout `repacked_layouts` names, never AMX's, and a stream runs; on a
    machine with AMX (cpu_features has AMX_INT8) this died before the change."""
    m = engine.Model(gguf_path("tiny_wide", kind), backend="cpu", n_threads=1)
    layouts = m.info["repacked_layouts"]
    assert sum(layouts.values()) == m.info["repacked_tensors"]
    assert "AMX" not in layouts
    assert set(layouts) <= {"CPU_REPACK"}, layouts
    assert len(ids(m)) > 5


def test_voxtral_tied_head_twin_gives_the_plain_logits(
    monkeypatch: pytest.MonkeyPatch, gguf_path: Callable[[str, str], Path]
) -> None:
    """The first output's logits (the same audio and prompt in every run) through the repacked
    layers and the head's repacked twin, against the plain Q4_K kernels and F32."""
    q4k = gguf_path("tiny_wide", "Q4_K")
    check_repacked_like_plain(
        gguf_path("tiny_wide", "f32"), q4k, "logits", 480, monkeypatch, rows=1, max_quant_error=0.8
    )


def test_twins_only_where_the_layout_exists(
    monkeypatch: pytest.MonkeyPatch, gguf_path: Callable[[str, str], Path]
) -> None:
    # F16 and Q8_0 have no repacked layout on x86 (Q8_0 has one on Arm), F32 none anywhere
    assert engine.Model(gguf_path("tiny_wide", "f32"), backend="cpu").info["product_twins"] == 0
    monkeypatch.setenv("CAPTIONIST_NO_REPACK", "1")
    m = engine.Model(gguf_path("tiny_wide", "Q4_K"), backend="cpu")
    assert m.info["product_twins"] == 0 and m.info["repacked_tensors"] == 0


def test_repacked_weights_read_on_several_threads_are_the_same(
    gguf_path: Callable[[str, str], Path],
) -> None:
    """weights_load shares the repacked tensors out among the model's threads: every tensor must
    land whole and in its own place (ggml's products give the same bits on any thread count)."""
    q4k = gguf_path("tiny_wide", "Q4_K")
    (one, m_one), (two, m_two) = captured(q4k, n_threads=1), captured(q4k, n_threads=2)
    assert m_one.info["repacked_tensors"] > 1 and m_two.info["repacked_tensors"] > 1
    for k in ("enc_out", "logits"):
        np.testing.assert_array_equal(one[k], two[k], err_msg=k)


def test_repacked_weights_from_the_mapping_or_a_read_are_the_same(
    gguf_path: Callable[[str, str], Path],
) -> None:
    """With mmap the repacked tensors are re-laid out straight from the mapped file (its pages then
    released); without, through read(). Both must give the same weights."""
    q4k = gguf_path("tiny_wide", "Q4_K")
    (mapped, m_mapped), (read, m_read) = captured(q4k, mmap=True), captured(q4k, mmap=False)
    assert m_mapped.info["repacked_tensors"] > 1 and m_read.info["repacked_tensors"] > 1
    assert m_mapped.info["weights_mapped"] is True and m_read.info["weights_mapped"] is False
    for k in ("enc_out", "logits"):
        np.testing.assert_array_equal(mapped[k], read[k], err_msg=k)
