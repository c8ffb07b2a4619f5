"""FastConformer RNN-T conversion (engine/GGUF.md second half): committed fixtures and synthetic checkpoints.

Every GGUF tensor is compared with the checkpoint through `fastconformer_expected` (the layout table
restated independently), every metadata key with the configs, every shape with `fastconformer_layout`.
"""

from __future__ import annotations

import json
import math
import tarfile
from pathlib import Path

import numpy as np
import pytest
import yaml
from gguf import GGMLQuantizationType
from safetensors.numpy import load_file

from captionist.convert import convert_checkpoint
from captionist.convert.torch_zip import read_torch_zip
from tests.convert.fastconformer_expected import Shape, expected_tensors
from tests.convert.fastconformer_layout import ALL_KEYS, PROMPT_KEYS, documented_shapes, stays_f32
from tests.convert.fastconformer_synthetic import (
    SPM_PIECES,
    Dims,
    nemo_config,
    nemo_members,
    nemo_state_dict,
    write_hf,
    write_nemo,
)
from tests.convert.gguf_contents import GgufContents, read_gguf
from tests.convert.synthetic_checkpoint import write_safetensors

FIXTURES = Path(__file__).resolve().parent.parent / "data" / "fastconformer"
HF_FIXTURES = ["nemotron_tiny", "nemotron_tiny_ctx", "nemotron35_tiny"]
NEMO_FIXTURE = FIXTURES / "parakeet_eou_tiny" / "model.nemo"
D = Dims()


def _hf_fixture(name: str) -> Path:
    path = FIXTURES / name / "hf"
    if not (path / "config.json").is_file():
        pytest.skip(f"fixture tests/data/fastconformer/{name}/hf not committed yet")
    return path


def _nemo_fixture() -> Path:
    if not NEMO_FIXTURE.is_file():
        pytest.skip("fixture tests/data/fastconformer/parakeet_eou_tiny/model.nemo not committed yet")
    return NEMO_FIXTURE


def _convert(src: Path, out: Path, outtype: str = "f32") -> GgufContents:
    convert_checkpoint(src, out, outtype=outtype, progress=False)
    return read_gguf(out)


def _nemo_parts(path: Path) -> tuple[dict, dict[str, np.ndarray]]:
    """model_config.yaml and the float state dict of a .nemo (weights read with the converter's reader)."""
    with tarfile.open(path) as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith("model_config.yaml"))
        config = yaml.safe_load(tar.extractfile(member).read())  # type: ignore[union-attr]
        ckpt = next(m for m in tar.getmembers() if m.name.endswith("model_weights.ckpt"))
    tensors = read_torch_zip(path, ckpt.offset_data, ckpt.size)
    sd = {k: t.array().astype(np.float32) for k, t in tensors.items() if t.dtype in ("F32", "F16")}
    return config, sd


def _check_layout(g: GgufContents, outtype: str = "f32") -> None:
    """All keys present, every tensor with its documented ggml shape and storage type, nothing else."""
    missing = [k for k in ALL_KEYS if k not in g.meta]
    assert not missing, missing
    assert g.meta["general.architecture"] == "fastconformer_rnnt"
    assert g.meta["fastconformer.format_version"] == 1
    is_35 = g.meta["fastconformer.variant"] == "nemotron3_5_asr"
    assert all((k in g.meta) == is_35 for k in PROMPT_KEYS)
    shapes = documented_shapes(g.meta)
    assert sorted(g.ggml_shapes) == sorted(shapes)
    matrix_type = {
        "f32": GGMLQuantizationType.F32,
        "f16": GGMLQuantizationType.F16,
        "bf16": GGMLQuantizationType.BF16,
    }[outtype]
    for name, shape in shapes.items():
        assert g.ggml_shapes[name] == shape, name
        assert g.types[name] == (GGMLQuantizationType.F32 if stays_f32(name) else matrix_type), name
    n_pieces = len(g.meta["tokenizer.fastconformer.pieces"])
    assert n_pieces in (g.meta["fastconformer.n_vocab"], g.meta["fastconformer.n_vocab"] - 1)
    assert len(g.meta["tokenizer.fastconformer.piece_types"]) == n_pieces


def _check_values(g: GgufContents, expected: dict[str, np.ndarray], rtol: float = 0.0) -> None:
    assert sorted(expected) == sorted(n for n in g.tensors if not n.startswith("audio."))
    for name, want in expected.items():
        np.testing.assert_allclose(g.f32(name), want, rtol=rtol, atol=rtol * 1e-3, err_msg=name)


def _hf_expected_meta(src: Path) -> dict[str, object]:
    config = json.loads((src / "config.json").read_text())
    enc = config["encoder_config"]
    proc = json.loads((src / "processor_config.json").read_text())
    fe = proc["feature_extractor"]
    default = proc["default_num_lookahead_tokens"]
    f = "fastconformer."
    return {
        f + "variant": config["model_type"],
        f + "audio.n_fft": fe["n_fft"],
        f + "audio.win_length": fe["win_length"],
        f + "audio.hop_length": fe["hop_length"],
        f + "audio.n_mel": fe["feature_size"],
        f + "encoder.n_embd": enc["hidden_size"],
        f + "encoder.n_layer": enc["num_hidden_layers"],
        f + "encoder.n_head": enc["num_attention_heads"],
        f + "encoder.n_ff": enc["intermediate_size"],
        f + "encoder.conv_kernel": enc["conv_kernel_size"],
        f + "encoder.conv_norm": "layer_norm",
        f + "encoder.subsampling_factor": enc["subsampling_factor"],
        f + "encoder.subsampling_channels": enc["subsampling_conv_channels"],
        f + "encoder.left_context": enc["sliding_window"] - 1,
        f + "encoder.lookaheads": [default]
        + [r for r in proc["supported_num_lookahead_tokens"] if r != default],
        f + "decoder.n_embd": config["decoder_hidden_size"],
        f + "decoder.n_layer": config["num_decoder_layers"],
        f + "joint.n_embd": config["decoder_hidden_size"],
        f + "joint.activation": config["hidden_act"],
        f + "n_vocab": config["vocab_size"],
        f + "blank_id": config["blank_token_id"],
        f + "max_symbols_per_step": config["max_symbols_per_step"],
    }


def _check_meta(g: GgufContents, expected: dict[str, object]) -> None:
    for key, want in expected.items():
        assert g.meta[key] == want, key


@pytest.mark.parametrize("name", HF_FIXTURES)
def test_hf_fixture_converts_to_the_documented_layout(name: str, tmp_path: Path) -> None:
    src = _hf_fixture(name)
    g = _convert(src, tmp_path / "m.gguf")
    _check_layout(g)
    _check_meta(g, _hf_expected_meta(src))
    config = json.loads((src / "config.json").read_text())
    enc = config["encoder_config"]
    assert g.meta["fastconformer.encoder.xscale"] == pytest.approx(
        math.sqrt(enc["hidden_size"]) if enc.get("scale_input", True) else 1.0
    )
    sd = {k: v.astype(np.float32) for k, v in load_file(src / "model.safetensors").items()}
    shape = Shape(
        enc["num_hidden_layers"],
        int(math.log2(enc["subsampling_factor"])),
        config["num_decoder_layers"],
        enc["hidden_size"],
        prompt=config["model_type"] == "nemotron3_5_asr",
    )
    _check_values(g, expected_tensors(sd, nemo=False, s=shape))
    tokenizer = json.loads((src / "tokenizer.json").read_text())
    by_id = {i: p for p, i in tokenizer["model"]["vocab"].items()} | {
        t["id"]: t["content"] for t in tokenizer["added_tokens"]
    }
    assert g.meta["tokenizer.fastconformer.pieces"] == [by_id[i] for i in range(len(by_id))]
    if g.meta["fastconformer.variant"] == "nemotron3_5_asr":
        processor = json.loads((src / "processor_config.json").read_text())
        table = processor.get("prompt_dictionary")
        if table is not None:
            assert (
                dict(
                    zip(g.meta["fastconformer.prompt.names"], g.meta["fastconformer.prompt.ids"], strict=True)
                )
                == table
            )
        assert g.meta["fastconformer.prompt.default_id"] == config["default_prompt_id"]


def test_nemo_fixture_converts_to_the_documented_layout(tmp_path: Path) -> None:
    src = _nemo_fixture()
    g = _convert(src, tmp_path / "m.gguf")
    _check_layout(g)
    config, sd = _nemo_parts(src)
    enc, joint = config["encoder"], config["joint"]
    contexts = (
        enc["att_context_size"] if isinstance(enc["att_context_size"][0], list) else [enc["att_context_size"]]
    )
    _check_meta(
        g,
        {
            "fastconformer.variant": "parakeet_eou",
            "fastconformer.encoder.n_embd": enc["d_model"],
            "fastconformer.encoder.left_context": contexts[0][0],
            "fastconformer.encoder.lookaheads": [c[1] for c in contexts],
            "fastconformer.n_vocab": joint["num_classes"] + 1,
            "fastconformer.blank_id": joint["num_classes"],
        },
    )
    norm = enc.get("conv_norm_type", "batch_norm")
    shape = Shape(
        enc["n_layers"],
        int(math.log2(enc["subsampling_factor"])),
        config["decoder"]["prednet"]["pred_rnn_layers"],
        enc["d_model"],
        conv_norm=norm,
        joint_out="" if joint["jointnet"].get("dropout") else "joint.joint_net.1",
    )
    _check_values(g, expected_tensors(sd, nemo=True, s=shape), rtol=1e-6 if norm == "batch_norm" else 0.0)
    # the reference's own tables: librosa's filterbank buffer and torch's symmetric Hann window
    assert np.array_equal(g.tensors["audio.mel_filters"], sd["preprocessor.featurizer.fb"][0].T)
    assert np.array_equal(g.tensors["audio.window"], sd["preprocessor.featurizer.window"])
    pieces = g.meta["tokenizer.fastconformer.pieces"]
    assert len(pieces) == joint["num_classes"]
    for special, key in (("<EOU>", "eou_id"), ("<EOB>", "eob_id")):
        want = pieces.index(special) if special in pieces else -1
        assert g.meta[f"tokenizer.fastconformer.{key}"] == want


def test_hf_frontend_tables_equal_the_nemo_reference_buffers(tmp_path: Path) -> None:
    """Computed slaney filters equal librosa's (NeMo's buffer) exactly; the window is within torch's ulp."""
    hf = _convert(_hf_fixture("nemotron_tiny"), tmp_path / "hf.gguf")
    _, sd = _nemo_parts(_nemo_fixture())
    fb, window = sd["preprocessor.featurizer.fb"][0].T, sd["preprocessor.featurizer.window"]
    if fb.shape != hf.tensors["audio.mel_filters"].shape:
        pytest.skip("the fixtures differ in n_mel")
    assert np.array_equal(hf.tensors["audio.mel_filters"], fb)
    np.testing.assert_allclose(hf.tensors["audio.window"], window, rtol=0, atol=6e-8)


def test_bf16_tables_are_rounded_like_the_reference(tmp_path: Path) -> None:
    src = tmp_path / "hf35"
    write_hf(src, D, prompt=True)
    g = _convert(src, tmp_path / "m.gguf")
    write_hf(tmp_path / "hf", D)
    plain = _convert(tmp_path / "hf", tmp_path / "p.gguf")
    for name in ("audio.mel_filters", "audio.window"):
        rounded = g.tensors[name]
        assert not np.any(rounded.view(np.uint32) & 0xFFFF), name
        f32 = plain.tensors[name]
        bits = f32.view(np.uint32)
        want = (((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16).astype(np.uint32).view(np.float32)
        assert np.array_equal(rounded, want), name


@pytest.mark.parametrize("outtype", ["f16", "bf16"])
def test_outtype_applies_to_the_documented_matrices(outtype: str, tmp_path: Path) -> None:
    sd = write_hf(tmp_path / "hf", D, prompt=True)
    g = _convert(tmp_path / "hf", tmp_path / "m.gguf", outtype)
    _check_layout(g, outtype)
    tol = 2e-3 if outtype == "f16" else 1e-2
    _check_values(
        g, expected_tensors(sd, nemo=False, s=Shape(D.layers, 3, D.pred_layers, D.embd, prompt=True)), tol
    )


def test_synthetic_hf_metadata_and_values(tmp_path: Path) -> None:
    sd = write_hf(tmp_path / "hf", D)
    g = _convert(tmp_path / "hf", tmp_path / "m.gguf")
    _check_layout(g)
    _check_values(g, expected_tensors(sd, nemo=False, s=Shape(D.layers, 3, D.pred_layers, D.embd)))
    m = g.meta
    assert m["fastconformer.encoder.lookaheads"] == [1, 4, 0]  # the processor's default moved first
    assert m["fastconformer.encoder.left_context"] == 40
    assert m["fastconformer.max_symbols_per_step"] == 7
    assert m["fastconformer.encoder.xscale"] == pytest.approx(4.0)
    assert m["fastconformer.audio.preemphasis"] == pytest.approx(0.97)
    assert m["fastconformer.audio.log_guard"] == 2.0**-24
    assert m["fastconformer.encoder.norm_eps"] == pytest.approx(1e-5)
    assert m["tokenizer.fastconformer.pieces"] == [p for p, _ in SPM_PIECES] + ["<blank>"]
    assert m["tokenizer.fastconformer.piece_types"] == [1, 1, 1, 0, 0, 0, 0, 0, 0, 2, 2, 1, 1, 1]
    assert (m["tokenizer.fastconformer.eou_id"], m["tokenizer.fastconformer.eob_id"]) == (11, 12)
    assert m["fastconformer.blank_id"] == len(SPM_PIECES) == m["fastconformer.n_vocab"] - 1


def test_hf_without_biases_and_in_f16_storage(tmp_path: Path) -> None:
    sd = write_hf(tmp_path / "hf", D, bias=False, dtype="F16")
    g = _convert(tmp_path / "hf", tmp_path / "m.gguf")
    _check_layout(g)
    _check_values(g, expected_tensors(sd, nemo=False, s=Shape(D.layers, 3, D.pred_layers, D.embd)))
    assert not g.tensors["enc.blk.1.attn_q.bias"].any() and not g.tensors["enc.blk.0.conv_dw.bias"].any()


def test_nemotron35_prompt_split(tmp_path: Path) -> None:
    sd = write_hf(tmp_path / "hf", D, prompt=True)
    g = _convert(tmp_path / "hf", tmp_path / "m.gguf")
    _check_layout(g)
    w1 = sd["prompt_projector.linear_1.weight"]
    # ggml [prompt.n_ff, n_prompts]: row p (numpy [p]) is the column added for prompt p
    for p in range(D.prompts):
        assert np.array_equal(g.tensors["prompt.fc1_lang.weight"][p], w1[:, D.embd + p])
    assert g.meta["fastconformer.prompt.names"] == ["en-US", "en", "de", "auto"]
    assert g.meta["fastconformer.prompt.ids"] == [0, 0, 2, 3]
    assert (g.meta["fastconformer.prompt.n_prompts"], g.meta["fastconformer.prompt.n_ff"]) == (
        D.prompts,
        D.prompt_ff,
    )
    assert g.meta["fastconformer.prompt.default_id"] == 3


@pytest.mark.parametrize("conv_norm", ["batch_norm", "layer_norm", "fused_batch_norm"])
def test_synthetic_nemo(conv_norm: str, tmp_path: Path) -> None:
    sd = nemo_state_dict(D, conv_norm)
    write_nemo(tmp_path / "m.nemo", nemo_members(nemo_config(D, conv_norm), sd))
    g = _convert(tmp_path / "m.nemo", tmp_path / "m.gguf", "f16")
    _check_layout(g, "f16")
    shape = Shape(D.layers, 3, D.pred_layers, D.embd, conv_norm=conv_norm)
    _check_values(g, expected_tensors(sd, nemo=True, s=shape), rtol=2e-3)
    f32 = _convert(tmp_path / "m.nemo", tmp_path / "f32.gguf")
    _check_values(
        f32, expected_tensors(sd, nemo=True, s=shape), rtol=1e-6 if conv_norm == "batch_norm" else 0.0
    )
    assert np.array_equal(f32.tensors["audio.mel_filters"], sd["preprocessor.featurizer.fb"][0].T)
    m = f32.meta
    assert m["fastconformer.encoder.conv_norm"] == (
        "layer_norm" if conv_norm == "layer_norm" else "batch_norm"
    )
    assert m["fastconformer.encoder.lookaheads"] == [1, 4]
    assert m["fastconformer.encoder.left_context"] == 40
    assert m["fastconformer.encoder.xscale"] == 1.0
    assert m["fastconformer.encoder.n_ff"] == D.ff
    assert m["fastconformer.joint.n_embd"] == D.joint
    assert m["fastconformer.max_symbols_per_step"] == 5
    assert m["tokenizer.fastconformer.piece_types"] == [1, 1, 1, 0, 0, 0, 0, 0, 0, 2, 2, 1, 1]
    assert (m["fastconformer.n_vocab"], m["fastconformer.blank_id"]) == (len(SPM_PIECES) + 1, len(SPM_PIECES))


def test_nemo_variants_compressed_extracted_and_without_joint_dropout(tmp_path: Path) -> None:
    sd = nemo_state_dict(D)
    members = nemo_members(nemo_config(D), sd)
    write_nemo(tmp_path / "a.nemo", members)
    reference = _convert(tmp_path / "a.nemo", tmp_path / "a.gguf")
    write_nemo(tmp_path / "gz.nemo", members, compressed=True)
    assert _convert(tmp_path / "gz.nemo", tmp_path / "gz.gguf").tensors.keys() == reference.tensors.keys()
    assert (tmp_path / "gz.gguf").read_bytes() == (tmp_path / "a.gguf").read_bytes()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # the temporary copy is gone
    folder = tmp_path / "extracted"
    folder.mkdir()
    for name, data in members.items():
        (folder / name).write_bytes(data)
    convert_checkpoint(folder, tmp_path / "x.gguf", outtype="f32", progress=False)
    assert (tmp_path / "x.gguf").read_bytes() == (tmp_path / "a.gguf").read_bytes()

    config = nemo_config(D)
    config["joint"]["jointnet"]["dropout"] = 0.0
    sd["joint.joint_net.1.weight"] = sd.pop("joint.joint_net.2.weight")
    sd["joint.joint_net.1.bias"] = sd.pop("joint.joint_net.2.bias")
    write_nemo(tmp_path / "nodrop.nemo", nemo_members(config, sd))
    g = _convert(tmp_path / "nodrop.nemo", tmp_path / "nodrop.gguf")
    assert np.array_equal(g.tensors["joint.out.weight"], sd["joint.joint_net.1.weight"])


def test_nemo_without_frontend_buffers_gets_the_computed_tables(tmp_path: Path) -> None:
    sd = nemo_state_dict(D)
    del sd["preprocessor.featurizer.fb"], sd["preprocessor.featurizer.window"]
    write_nemo(tmp_path / "m.nemo", nemo_members(nemo_config(D), sd))
    g = _convert(tmp_path / "m.nemo", tmp_path / "m.gguf")
    write_hf(tmp_path / "hf", D)  # same sample rate, n_fft, n_mel and window: the same computed tables
    hf = _convert(tmp_path / "hf", tmp_path / "hf.gguf")
    for name in ("audio.mel_filters", "audio.window"):
        assert np.array_equal(g.tensors[name], hf.tensors[name]), name
    window = g.tensors["audio.window"]
    # symmetric Hann (periodic=False), up to float32 rounding of the angle as torch computes it
    np.testing.assert_allclose(window, window[::-1], rtol=0, atol=1e-6)
    assert window[0] == 0 and 0.9999 < window.max() <= 1.0


def test_cli_converts_a_nemo_archive(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from captionist.__main__ import main

    write_nemo(tmp_path / "m.nemo", nemo_members(nemo_config(D), nemo_state_dict(D)))
    assert (
        main(["convert", str(tmp_path / "m.nemo"), "-o", str(tmp_path / "m.gguf"), "--outtype", "bf16"]) == 0
    )
    assert "wrote" in capsys.readouterr().out
    assert read_gguf(tmp_path / "m.gguf").types["enc.blk.0.attn_q.weight"] == GGMLQuantizationType.BF16


def test_hf_flat_preprocessor_config_and_shards(tmp_path: Path) -> None:
    src = tmp_path / "hf"
    sd = write_hf(src, D)
    reference = _convert(src, tmp_path / "a.gguf")
    processor = json.loads((src / "processor_config.json").read_text())
    flat = processor.pop("feature_extractor") | processor  # older save_pretrained: one flat file
    (src / "processor_config.json").unlink()
    (src / "preprocessor_config.json").write_text(json.dumps(flat))
    (src / "model.safetensors").unlink()
    names = sorted(sd)
    weight_map = {}
    for i, part in enumerate((names[::2], names[1::2])):
        shard = f"model-0000{i + 1}-of-00002.safetensors"
        write_safetensors(src / shard, {n: ("F32", sd[n]) for n in part})
        weight_map |= {n: shard for n in part}
    (src / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    _convert(src, tmp_path / "b.gguf")
    assert (tmp_path / "b.gguf").read_bytes() == (tmp_path / "a.gguf").read_bytes()
    assert reference.meta["fastconformer.encoder.lookaheads"] == [1, 4, 0]
