"""Conversion of the tiny reference checkpoints (generated with transformers) in both layouts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from gguf import GGMLQuantizationType
from safetensors.numpy import load_file

from captionist.convert import convert_checkpoint
from tests.convert.gguf_contents import GgufContents, read_gguf

REFERENCE = Path(__file__).resolve().parent.parent / "data" / "reference"
MODELS = ["tiny_wide", "tiny_small"]


def _model_dir(model: str) -> Path:
    path = REFERENCE / model
    if not (path / "hf").is_dir() or not (path / "mistral").is_dir():
        pytest.skip(f"reference checkpoint {model} not generated (tests/data/reference/{model})")
    return path


@pytest.fixture(scope="module", params=MODELS)
def converted(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    model = request.param
    ref = _model_dir(model)
    out = tmp_path_factory.mktemp(model)
    for layout in ("hf", "mistral"):
        convert_checkpoint(ref / layout, out / f"{layout}.gguf", outtype="f32", progress=False)
    return {"ref": ref, "hf": read_gguf(out / "hf.gguf"), "mistral": read_gguf(out / "mistral.gguf")}


def test_hf_and_mistral_layouts_convert_identically(converted: dict[str, object]) -> None:
    hf, mistral = converted["hf"], converted["mistral"]
    assert isinstance(hf, GgufContents) and isinstance(mistral, GgufContents)
    assert hf.meta == mistral.meta
    assert list(hf.tensors) == list(mistral.tensors)
    for name in hf.tensors:
        assert hf.types[name] == mistral.types[name], name
        assert np.array_equal(hf.tensors[name], mistral.tensors[name]), name


def test_tensor_values_equal_the_hf_safetensors(converted: dict[str, object]) -> None:
    ref, g = converted["ref"], converted["hf"]
    assert isinstance(ref, Path) and isinstance(g, GgufContents)
    sd = {k.removeprefix("model."): v for k, v in load_file(ref / "hf" / "model.safetensors").items()}
    pairs = {
        "enc.conv1.weight": "audio_tower.embedder.conv1.weight",
        "enc.blk.0.attn_q.weight": "audio_tower.layers.0.self_attn.q_proj.weight",
        "enc.blk.0.attn_q.bias": "audio_tower.layers.0.self_attn.q_proj.bias",
        "enc.blk.1.ffn_down.bias": "audio_tower.layers.1.mlp.down_proj.bias",
        "proj.linear_1.weight": "multi_modal_projector.linear_1.weight",
        "dec.token_embd.weight": "language_model.model.embed_tokens.weight",
        "dec.blk.1.attn_k.weight": "language_model.model.layers.1.self_attn.k_proj.weight",
        "dec.blk.0.ada_1.weight": "language_model.model.layers.0.ada_rms_norm.linear1.weight",
        "dec.norm.weight": "language_model.model.norm.weight",
    }
    for gguf_name, hf_name in pairs.items():
        assert g.types[gguf_name] == GGMLQuantizationType.F32
        assert np.array_equal(g.tensors[gguf_name], sd[hf_name]), gguf_name
    # every checkpoint tensor is used exactly once (the tied lm_head is never stored)
    assert len(g.tensors) == 2 + len([k for k in sd if not k.endswith("lm_head.weight")])


def test_frontend_tables_equal_the_feature_extractor(converted: dict[str, object]) -> None:
    ref, g = converted["ref"], converted["hf"]
    assert isinstance(ref, Path) and isinstance(g, GgufContents)
    inter = np.load(ref / "intermediates_speech_short_d6.npz")
    # reference mel_filters is [n_freq, n_mel] (feature extractor layout) = ggml [n_mel, n_freq]
    assert g.ggml_shapes["audio.mel_filters"] == [
        inter["mel_filters"].shape[1],
        inter["mel_filters"].shape[0],
    ]
    np.testing.assert_allclose(g.tensors["audio.mel_filters"], inter["mel_filters"], rtol=0, atol=1e-7)
    np.testing.assert_allclose(g.tensors["audio.window"], inter["window"], rtol=0, atol=1e-6)


def test_reduced_precision_outtypes(tmp_path: Path) -> None:
    ref = _model_dir("tiny_small")
    f32 = None
    for outtype, ggml_type in (
        ("f32", None),
        ("f16", GGMLQuantizationType.F16),
        ("bf16", GGMLQuantizationType.BF16),
    ):
        convert_checkpoint(ref / "mistral", tmp_path / f"{outtype}.gguf", outtype=outtype, progress=False)
        g = read_gguf(tmp_path / f"{outtype}.gguf")
        if f32 is None:
            f32 = g
            continue
        for name in g.tensors:
            matrix = f32.tensors[name].ndim >= 2 and ".ada_" not in name and not name.startswith("audio.")
            assert g.types[name] == (ggml_type if matrix else GGMLQuantizationType.F32), name
            # the mistral copy is stored as bf16, so bf16 output is exact and f16 is close
            tol = 2e-3 if outtype == "f16" else 0.0
            np.testing.assert_allclose(g.f32(name), f32.f32(name), rtol=tol, atol=tol * 1e-2, err_msg=name)
