"""Converter inputs it must refuse before writing: outputs that are not regular files, hyper-parameters
the engine cannot run (its own rules, via _engine.check_metadata) and malformed safetensors layouts."""

from __future__ import annotations

import json
import os
import shutil
import struct
from pathlib import Path
from typing import Any

import pytest

from captionist.convert import convert_checkpoint
from captionist.convert.errors import ConversionError
from captionist.convert.safetensors_file import SafetensorsFile

DATA = Path(__file__).resolve().parent.parent / "data"
VOXTRAL_HF = DATA / "reference" / "tiny_small" / "hf"
NEMOTRON_HF = DATA / "fastconformer" / "nemotron_tiny" / "hf"


def test_output_fifo_is_refused_and_kept(tmp_path: Path) -> None:
    """-o /dev/full (as root) once replaced the device node; a FIFO stands in for it here."""
    fifo = tmp_path / "out.gguf"
    os.mkfifo(fifo)
    with pytest.raises(ConversionError, match="is not a regular file"):
        convert_checkpoint(VOXTRAL_HF, fifo, "f32", progress=False)
    assert fifo.is_fifo()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.gguf"]


def test_output_symlink_to_a_fifo_is_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    link = tmp_path / "out.gguf"
    link.symlink_to(fifo)
    with pytest.raises(ConversionError, match="is not a regular file"):
        convert_checkpoint(VOXTRAL_HF, link, "f32", progress=False)
    assert link.is_symlink() and fifo.is_fifo()


def test_existing_regular_output_is_replaced(tmp_path: Path) -> None:
    out = tmp_path / "out.gguf"
    out.write_bytes(b"old")
    convert_checkpoint(VOXTRAL_HF, out, "f32", progress=False)
    assert out.read_bytes()[:4] == b"GGUF"


def edited_checkpoint(src: Path, dst: Path, edit: dict[str, Any]) -> Path:
    """A copy of the checkpoint folder `src` with config.json values replaced (dotted keys)."""
    shutil.copytree(src, dst)
    config = json.loads((dst / "config.json").read_text())
    for dotted, value in edit.items():
        *path, last = dotted.split(".")
        node = config
        for part in path:
            node = node[part]
        node[last] = value
    (dst / "config.json").write_text(json.dumps(config))
    return dst


@pytest.mark.parametrize(
    ("src", "edit", "key"),
    [
        (VOXTRAL_HF, {"audio_config.rms_norm_eps": -1e-5}, "voxtral.encoder.rms_eps"),
        (VOXTRAL_HF, {"text_config.rms_norm_eps": 0.5}, "voxtral.decoder.rms_eps"),
        (VOXTRAL_HF, {"text_config.rope_parameters.rope_theta": 0.5}, "voxtral.decoder.rope_theta"),
        (VOXTRAL_HF, {"audio_config.sliding_window": 70000}, "voxtral.encoder.sliding_window"),
        (VOXTRAL_HF, {"text_config.max_position_embeddings": 78}, "voxtral.decoder.max_position"),
        (NEMOTRON_HF, {"max_symbols_per_step": 500}, "fastconformer.max_symbols_per_step"),
        (NEMOTRON_HF, {"encoder_config.sliding_window": 5000}, "fastconformer.encoder.left_context"),
    ],
)
def test_hyperparameters_the_engine_cannot_run_are_refused_before_writing(
    tmp_path: Path, src: Path, edit: dict[str, Any], key: str
) -> None:
    ckpt = edited_checkpoint(src, tmp_path / "ckpt", edit)
    out = tmp_path / "out" / "m.gguf"
    out.parent.mkdir()
    with pytest.raises(ConversionError) as err:
        convert_checkpoint(ckpt, out, "f32", progress=False)
    assert f"'{key}'" in str(err.value) and "\n" not in str(err.value)
    assert list(out.parent.iterdir()) == []


def write_safetensors(path: Path, header: dict[str, Any], data: bytes) -> Path:
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + data)
    return path


F32_2 = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}


@pytest.mark.parametrize(
    ("header", "n_bytes", "message"),
    [
        ({"a": F32_2, "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}, 12, "overlaps"),
        ({"a": F32_2, "b": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, 8, "overlaps"),
        ({"a": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}, 12, "leaves a gap"),
        ({"a": F32_2}, 12, "4 bytes after the last tensor"),
        ({"a": {"dtype": "F32", "shape": [2.5], "data_offsets": [0, 8]}}, 8, "non-negative integers"),
        ({"a": {"dtype": "F32", "shape": [-2, -1], "data_offsets": [0, 8]}}, 8, "non-negative integers"),
        ({"a": {"dtype": "F32", "shape": [True, 2], "data_offsets": [0, 8]}}, 8, "non-negative integers"),
        ({"a": {"dtype": "F32", "shape": ["2"], "data_offsets": [0, 8]}}, 8, "non-negative integers"),
        ({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0.0, 8.0]}}, 8, "non-negative integers"),
        ({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8, 9]}}, 8, r"expected \[begin, end\]"),
        ({"a": {"dtype": "F32", "shape": [2]}}, 8, "corrupt safetensors header entry"),
        ({"a": "x"}, 8, "corrupt safetensors header entry"),
    ],
)
def test_bad_safetensors_layouts_are_refused(
    tmp_path: Path, header: dict[str, Any], n_bytes: int, message: str
) -> None:
    p = write_safetensors(tmp_path / "m.safetensors", header, bytes(n_bytes))
    with pytest.raises(ConversionError, match=message):
        SafetensorsFile(p)


def test_a_well_formed_safetensors_file_reads(tmp_path: Path) -> None:
    header = {
        "__metadata__": {"format": "pt"},
        "a": F32_2,
        "z": {"dtype": "F16", "shape": [0], "data_offsets": [8, 8]},
        "b": {"dtype": "F16", "shape": [1, 2], "data_offsets": [8, 12]},
    }
    data = struct.pack("<2f2e", 1, 2, 3, 4)
    st = SafetensorsFile(write_safetensors(tmp_path / "m.safetensors", header, data))
    assert st.tensor("a").tolist() == [1.0, 2.0]
    assert st.tensor("b").tolist() == [[3.0, 4.0]]
    assert st.tensor("z").shape == (0,)
