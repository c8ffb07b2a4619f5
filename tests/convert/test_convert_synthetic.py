"""Conversion of tiny synthetic checkpoints: both layouts, dtypes, sharding, metadata."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import pytest
from gguf import GGMLQuantizationType

from captionist.convert import convert_checkpoint
from tests.convert.gguf_contents import read_gguf
from tests.convert.synthetic_checkpoint import (
    N_SPECIAL,
    SPECIAL_TOKENS,
    Dims,
    hf_config,
    write_hf,
    write_mistral,
    write_safetensors,
)

D = Dims()


@pytest.fixture
def hf_dir(tmp_path: Path) -> tuple[Path, dict[str, np.ndarray]]:
    sd = write_hf(tmp_path / "hf", D)
    return tmp_path / "hf", sd


def test_hf_tensors_equal_safetensors_values(
    hf_dir: tuple[Path, dict[str, np.ndarray]], tmp_path: Path
) -> None:
    src, sd = hf_dir
    convert_checkpoint(src, tmp_path / "m.gguf", outtype="f32", progress=False)
    g = read_gguf(tmp_path / "m.gguf")
    assert np.array_equal(g.tensors["dec.token_embd.weight"], sd["language_model.model.embed_tokens.weight"])
    assert np.array_equal(
        g.tensors["enc.blk.1.attn_q.bias"], sd["audio_tower.layers.1.self_attn.q_proj.bias"]
    )
    assert np.array_equal(g.tensors["enc.conv2.weight"], sd["audio_tower.embedder.conv2.weight"])
    assert np.array_equal(
        g.tensors["dec.blk.1.ada_2.weight"], sd["language_model.model.layers.1.ada_rms_norm.linear2.weight"]
    )
    # ggml order is the reverse of PyTorch order: a Linear(in, out) weight reads [in, out]
    assert g.ggml_shapes["proj.linear_1.weight"] == [4 * D.enc_embd, D.dec_embd]
    assert g.ggml_shapes["dec.blk.0.attn_k.weight"] == [D.dec_embd, D.dec_kv_heads * D.dec_head_dim]
    assert g.ggml_shapes["enc.conv1.weight"] == [3, D.n_mel, D.enc_embd]
    assert len(g.tensors) == 2 + 4 + 13 * D.enc_layers + 1 + 2 + 1 + 11 * D.dec_layers + 1


def test_mistral_layout_gives_the_same_file_as_hf(
    hf_dir: tuple[Path, dict[str, np.ndarray]], tmp_path: Path
) -> None:
    src, sd = hf_dir
    write_mistral(tmp_path / "mistral", D, sd)
    convert_checkpoint(src, tmp_path / "a.gguf", outtype="f32", progress=False)
    convert_checkpoint(tmp_path / "mistral", tmp_path / "b.gguf", outtype="f32", progress=False)
    a, b = read_gguf(tmp_path / "a.gguf"), read_gguf(tmp_path / "b.gguf")
    assert list(a.tensors) == list(b.tensors)
    for name in a.tensors:
        assert a.types[name] == b.types[name], name
        assert np.array_equal(a.tensors[name], b.tensors[name]), name
    assert a.meta == b.meta


def test_metadata(hf_dir: tuple[Path, dict[str, np.ndarray]], tmp_path: Path) -> None:
    src, _ = hf_dir
    convert_checkpoint(src, tmp_path / "m.gguf", outtype="f16", progress=False)
    meta = read_gguf(tmp_path / "m.gguf").meta
    assert meta["general.architecture"] == "voxtral_realtime"
    assert meta["voxtral.default_num_delay_tokens"] == 12  # tekken 960 ms / 80 ms, not the config's 6
    assert meta["voxtral.audio.n_left_pad_tokens"] == 16
    assert meta["voxtral.decoder.ada_dim"] == D.ada_dim
    assert meta["voxtral.decoder.n_vocab"] == D.n_vocab
    assert meta["voxtral.encoder.head_dim"] == D.enc_head_dim
    assert meta["voxtral.audio.n_mel"] == D.n_mel
    assert meta["tokenizer.tekken.streaming_pad_id"] == SPECIAL_TOKENS.index("[STREAMING_PAD]")
    assert meta["tokenizer.tekken.streaming_word_id"] == SPECIAL_TOKENS.index("[STREAMING_WORD]")
    assert (meta["tokenizer.tekken.bos_id"], meta["tokenizer.tekken.eos_id"]) == (1, 2)
    assert meta["tokenizer.tekken.n_special"] == N_SPECIAL


def test_vocab_table(hf_dir: tuple[Path, dict[str, np.ndarray]], tmp_path: Path) -> None:
    src, _ = hf_dir
    tekken = json.loads((src / "tekken.json").read_text())
    convert_checkpoint(src, tmp_path / "m.gguf", outtype="f16", progress=False)
    g = read_gguf(tmp_path / "m.gguf")
    assert len(g.meta["tokenizer.tekken.token_offsets"]) == D.n_vocab + 1  # 12 normal tokens cut to 10
    assert g.token(1) == b"<s>"
    assert g.token(33) == b"[STREAMING_WORD]"
    assert g.token(500) == b"<SPECIAL_500>"  # ranks tekken.json does not list
    for r in range(D.n_vocab - N_SPECIAL):
        assert g.token(N_SPECIAL + r) == base64.b64decode(tekken["vocab"][r]["token_bytes"])


@pytest.mark.parametrize(
    ("outtype", "ggml_type"),
    [
        ("f32", GGMLQuantizationType.F32),
        ("f16", GGMLQuantizationType.F16),
        ("bf16", GGMLQuantizationType.BF16),
    ],
)
def test_outtype_applies_to_matrices_only(
    hf_dir: tuple[Path, dict[str, np.ndarray]], tmp_path: Path, outtype: str, ggml_type: GGMLQuantizationType
) -> None:
    src, sd = hf_dir
    convert_checkpoint(src, tmp_path / "m.gguf", outtype=outtype, progress=False)
    g = read_gguf(tmp_path / "m.gguf")
    matrices = [
        "enc.conv1.weight",
        "enc.blk.0.attn_q.weight",
        "proj.linear_2.weight",
        "dec.token_embd.weight",
        "dec.blk.1.ffn_down.weight",
    ]
    always_f32 = [
        "audio.mel_filters",
        "audio.window",
        "enc.conv1.bias",
        "enc.blk.0.attn_q.bias",
        "enc.norm.weight",
        "dec.blk.0.ada_1.weight",
        "dec.blk.0.ada_2.weight",
        "dec.blk.0.ffn_norm.weight",
        "dec.norm.weight",
    ]
    for name in matrices:
        assert g.types[name] == ggml_type, name
    for name in always_f32:
        assert g.types[name] == GGMLQuantizationType.F32, name
    expected = sd["language_model.model.layers.1.mlp.down_proj.weight"]
    tol = {"f32": 0, "f16": 1e-3, "bf16": 0}[outtype]  # values are bf16-exact
    np.testing.assert_allclose(g.f32("dec.blk.1.ffn_down.weight"), expected, rtol=tol, atol=tol)


def test_sharded_hf_with_model_prefix_and_tied_head(tmp_path: Path) -> None:
    sd = write_hf(tmp_path / "hf", D)
    (tmp_path / "hf" / "model.safetensors").unlink()
    names = sorted(sd)
    shards = {"model-00001-of-00002.safetensors": names[::2], "model-00002-of-00002.safetensors": names[1::2]}
    weight_map = {}
    for shard, shard_names in shards.items():
        tensors = {"model." + n: ("F32", sd[n]) for n in shard_names}
        if shard.startswith("model-00002"):
            tensors["lm_head.weight"] = ("F32", sd["language_model.model.embed_tokens.weight"])
        write_safetensors(tmp_path / "hf" / shard, tensors)
        weight_map.update({n: shard for n in tensors})
    (tmp_path / "hf" / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    convert_checkpoint(tmp_path / "hf", tmp_path / "m.gguf", outtype="f32", progress=False)
    g = read_gguf(tmp_path / "m.gguf")
    assert "lm_head.weight" not in g.tensors and "output.weight" not in g.tensors
    assert np.array_equal(
        g.tensors["dec.blk.0.attn_v.weight"], sd["language_model.model.layers.0.self_attn.v_proj.weight"]
    )


def test_progress_bar_goes_to_stderr(
    hf_dir: tuple[Path, dict[str, np.ndarray]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src, _ = hf_dir
    convert_checkpoint(src, tmp_path / "m.gguf", outtype="f16", progress=True)
    assert "convert" in capsys.readouterr().err


def test_folder_with_both_layouts_uses_the_weights_present(tmp_path: Path) -> None:
    src = tmp_path / "both"
    write_mistral(src, D)
    # hub repositories ship config.json next to params.json
    (src / "config.json").write_text(json.dumps(hf_config(D)))
    convert_checkpoint(src, tmp_path / "m.gguf", outtype="bf16", progress=False)
    assert read_gguf(tmp_path / "m.gguf").types["dec.token_embd.weight"] == GGMLQuantizationType.BF16


def test_fallbacks_without_tekken_audio_and_with_null_window(tmp_path: Path) -> None:
    src = tmp_path / "hf"
    write_hf(src, D)
    tok = json.loads((src / "tekken.json").read_text())
    del tok["audio"]
    (src / "tekken.json").write_text(json.dumps(tok))
    config = hf_config(D)
    config["default_num_delay_tokens"] = 4
    config["text_config"]["sliding_window"] = None
    config["text_config"]["max_position_embeddings"] = 4096
    (src / "config.json").write_text(json.dumps(config))
    convert_checkpoint(src, tmp_path / "m.gguf", outtype="f16", progress=False)
    meta = read_gguf(tmp_path / "m.gguf").meta
    assert meta["voxtral.default_num_delay_tokens"] == 4
    assert meta["voxtral.audio.n_left_pad_tokens"] == 32
    assert meta["voxtral.decoder.sliding_window"] == 4096
    assert meta["voxtral.decoder.max_position"] == 4096
