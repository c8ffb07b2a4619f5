"""Bad FastConformer input gives a one-line ConversionError and never leaves a (partial) output file."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from captionist.convert import ConversionError, convert_checkpoint
from captionist.convert import converter as converter_module
from tests.convert.fastconformer_synthetic import (
    Dims,
    hf_state_dict,
    nemo_config,
    nemo_members,
    nemo_state_dict,
    write_hf,
    write_nemo,
)
from tests.convert.synthetic_checkpoint import write_safetensors
from tests.convert.torch_checkpoint import torch_zip_bytes

D = Dims()


def _edit_json(path: Path, edit: Callable[[dict], None]) -> None:
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))


def _hf(config_edit: Callable[[dict], None] | None = None, sd_edit=None, prompt: bool = False):  # noqa: ANN001, ANN202
    def make(src: Path) -> Path:
        write_hf(src, D, prompt=prompt)
        if config_edit:
            _edit_json(src / "config.json", config_edit)
        if sd_edit:
            sd = hf_state_dict(D, prompt)
            sd_edit(sd)
            write_safetensors(src / "model.safetensors", {k: ("F32", v) for k, v in sd.items()})
        return src

    return make


def _enc(**values: object) -> Callable[[dict], None]:
    return lambda c: c["encoder_config"].update(values)


def _nemo(config_edit=None, sd_edit=None, members_edit=None):  # noqa: ANN001, ANN202
    def make(src: Path) -> Path:
        config, sd = nemo_config(D), nemo_state_dict(D)
        if config_edit:
            config_edit(config)
        if sd_edit:
            sd_edit(sd)
        members = nemo_members(config, sd)
        if members_edit:
            members_edit(members)
        path = src.with_suffix(".nemo")
        write_nemo(path, members)
        return path

    return make


def _truncate_safetensors(src: Path) -> Path:
    write_hf(src, D)
    path = src / "model.safetensors"
    path.write_bytes(path.read_bytes()[:-64])
    return src


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def _truncated_nemo(src: Path) -> Path:
    path = _nemo()(src)
    data = path.read_bytes()
    return _write(path, data[: len(data) // 2])


_SYSTEM = b"cos\nsystem\n(X\x05\x00\x00\x00touch_tR"  # os.system("touch_") if ever unpickled
_EVAL = b"cbuiltins\neval\n(X\x03\x00\x00\x001+1tR"


def _hostile(payload: bytes) -> Callable[[dict[str, bytes]], None]:
    def edit(members: dict[str, bytes]) -> None:
        members["model_weights.ckpt"] = torch_zip_bytes({"a": np.zeros(2, np.float32)}, inject=payload)

    return edit


CASES: dict[str, tuple[Callable[[Path], Path], str]] = {
    "hf truncated safetensors": (_truncate_safetensors, "is truncated"),
    "hf missing tensor": (
        _hf(sd_edit=lambda sd: sd.pop("encoder.layers.1.self_attn.v_proj.bias")),
        "lacks tensor 'encoder.layers.1.self_attn.v_proj.bias'",
    ),
    "hf wrong shape": (
        _hf(sd_edit=lambda sd: sd.update({"joint.head.weight": np.zeros((3, D.pred), np.float32)})),
        "'joint.head.weight' has shape [3, 12], expected [14, 12]",
    ),
    "hf unexpected tensor": (
        _hf(sd_edit=lambda sd: sd.update({"encoder.layers.2.norm_out.weight": np.ones(D.embd, np.float32)})),
        "unexpected tensor 'encoder.layers.2.norm_out.weight'",
    ),
    "hf missing prompt projector": (
        _hf(config_edit=lambda c: c.update(model_type="nemotron3_5_asr")),
        "lacks tensor 'prompt_projector.linear_1.weight'",
    ),
    "unknown model_type": (_hf(config_edit=lambda c: c.update(model_type="llama")), "model_type 'llama'"),
    "hf no tokenizer": (lambda src: (_hf()(src), (src / "tokenizer.json").unlink())[0], "no tokenizer.json"),
    "hf vocab mismatch": (
        _hf(config_edit=lambda c: c.update(vocab_size=20)),
        "pieces but the joint network has 20",
    ),
    "hf blank mismatch": (_hf(config_edit=lambda c: c.update(blank_token_id=3)), "blank_token_id is 3"),
    "hf even conv kernel": (_hf(config_edit=_enc(conv_kernel_size=4)), "conv kernel 4 must be odd"),
    "hf heads": (
        _hf(config_edit=_enc(num_attention_heads=3, num_key_value_heads=3)),
        "not a multiple of the 3",
    ),
    "hf subsampling factor": (_hf(config_edit=_enc(subsampling_factor=6)), "must be a power of 2"),
    "hf activation": (_hf(config_edit=_enc(hidden_act="gelu")), "only 'silu'"),
    "hf joint activation": (
        _hf(config_edit=lambda c: c.update(hidden_act="gelu")),
        "joint activation 'gelu'",
    ),
    "hf bad lookahead": (
        lambda src: (
            _hf()(src),
            _edit_json(src / "processor_config.json", lambda p: p.update(default_num_lookahead_tokens=9)),
        )[0],
        "default_num_lookahead_tokens 9 is not one of [4, 1, 0]",
    ),
    "hf table dtype": (
        lambda src: (
            _hf()(src),
            _edit_json(
                src / "processor_config.json",
                lambda p: p["feature_extractor"].update(mel_filters_dtype="float64"),
            ),
        )[0],
        "mel_filters_dtype 'float64' is not supported",
    ),
    "nemo hostile pickle (os.system)": (
        _nemo(members_edit=_hostile(_SYSTEM)),
        "refusing to load it: its pickle refers to os.system",
    ),
    "nemo hostile pickle (eval)": (
        _nemo(members_edit=_hostile(_EVAL)),
        "builtins.eval, which is not tensor data",
    ),
    "nemo corrupt tar": (
        lambda src: _write(src.with_suffix(".nemo"), b"\x00garbage" * 999),
        "not a readable .nemo",
    ),
    "nemo truncated": (_truncated_nemo, "src.nemo is not a readable .nemo archive (unexpected end of data)"),
    "nemo not a zip checkpoint": (
        _nemo(members_edit=lambda m: m.update({"model_weights.ckpt": b"PK not really"})),
        "not a readable torch checkpoint",
    ),
    "nemo no config": (_nemo(members_edit=lambda m: m.pop("model_config.yaml")), "no model_config.yaml"),
    "nemo corrupt yaml": (
        _nemo(members_edit=lambda m: m.update({"model_config.yaml": b"a: [1, 2"})),
        "model_config.yaml in src.nemo is not valid YAML",
    ),
    "nemo truncated tokenizer": (
        _nemo(
            members_edit=lambda m: m.update({"0123abcd_tokenizer.model": m["0123abcd_tokenizer.model"][:-7]})
        ),
        "is truncated or not a SentencePiece model",
    ),
    "nemo wordpiece tokenizer": (
        _nemo(config_edit=lambda c: c["tokenizer"].update(type="wpe")),
        "only SentencePiece ('bpe')",
    ),
    "nemo missing tensor": (
        _nemo(sd_edit=lambda sd: sd.pop("encoder.layers.0.conv.batch_norm.running_var")),
        "lacks tensor 'encoder.layers.0.conv.batch_norm.running_var'",
    ),
    "nemo wrong shape": (
        _nemo(
            sd_edit=lambda sd: sd.update({"joint.enc.weight": np.zeros((D.joint, D.embd + 1), np.float32)})
        ),
        "'joint.enc.weight' has shape [10, 17], expected [10, 16]",
    ),
    "nemo ctc model": (
        _nemo(config_edit=lambda c: c.update(target="nemo.collections.asr.models.EncDecCTCModelBPE")),
        "only NeMo RNN-T BPE models",
    ),
    "nemo regular attention": (
        _nemo(config_edit=lambda c: c["encoder"].update(att_context_style="regular")),
        "att_context_style is 'regular'",
    ),
    "nemo non-causal conv": (
        _nemo(config_edit=lambda c: c["encoder"].update(conv_context_size=None)),
        "needs 'causal' convolutions",
    ),
    "nemo non-causal subsampling": (
        _nemo(config_edit=lambda c: c["encoder"].update(causal_downsampling=False)),
        "causal subsampling only",
    ),
    "nemo striding subsampling": (
        _nemo(config_edit=lambda c: c["encoder"].update(subsampling="striding")),
        "only depthwise-separable 'dw_striding'",
    ),
    "nemo normalised features": (
        _nemo(config_edit=lambda c: c["preprocessor"].update(normalize="per_feature")),
        "normalize: NA",
    ),
    "nemo unlimited context": (
        _nemo(config_edit=lambda c: c["encoder"].update(att_context_size=[-1, 1])),
        "unlimited (-1) contexts cannot be streamed",
    ),
    "nemo mixed left contexts": (
        _nemo(config_edit=lambda c: c["encoder"].update(att_context_size=[[40, 1], [20, 4]])),
        "share one left context",
    ),
    "nemo tdt joint": (
        _nemo(config_edit=lambda c: c["joint"].update(num_extra_outputs=5)),
        "TDT duration outputs are not supported",
    ),
    "nemo tokenizer mismatch": (
        _nemo(config_edit=lambda c: (c["joint"].update(num_classes=20), c["decoder"].update(vocab_size=20))),
        "13 pieces but the joint network has 21 outputs",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_raises_one_line_and_leaves_nothing(case: str, tmp_path: Path) -> None:
    make, expected = CASES[case]
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    monkey_dir = tmp_path / "work"
    monkey_dir.mkdir()
    src = make(monkey_dir / "src")
    with pytest.raises(ConversionError) as info:
        convert_checkpoint(src, out_dir / "m.gguf", progress=False)
    message = str(info.value)
    assert expected in message
    assert "\n" not in message
    assert list(out_dir.iterdir()) == []
    assert not (Path.cwd() / "touch_").exists()


def test_missing_output_folder(tmp_path: Path) -> None:
    write_hf(tmp_path / "hf", D)
    with pytest.raises(ConversionError, match="output folder .* does not exist"):
        convert_checkpoint(tmp_path / "hf", tmp_path / "nope" / "m.gguf", progress=False)


def test_missing_source(tmp_path: Path) -> None:
    with pytest.raises(ConversionError, match="is not a directory or a .nemo file"):
        convert_checkpoint(tmp_path / "nope.nemo", tmp_path / "m.gguf", progress=False)


@pytest.mark.parametrize("compressed", [False, True])
def test_failure_while_writing_keeps_old_output_and_temporary_files_go(
    compressed: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_nemo(tmp_path / "m.nemo", nemo_members(nemo_config(D), nemo_state_dict(D)), compressed=compressed)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    (out_dir / "m.gguf").write_bytes(b"previous model")
    calls = []
    real = converter_module.convert_rows

    def failing(*args: object, **kwargs: object) -> np.ndarray:
        calls.append(1)
        if len(calls) == 20:
            raise OSError(28, "No space left on device")
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(converter_module, "convert_rows", failing)
    with pytest.raises(ConversionError, match="No space left on device"):
        convert_checkpoint(tmp_path / "m.nemo", out_dir / "m.gguf", progress=False)
    assert sorted(p.name for p in out_dir.iterdir()) == ["m.gguf"]
    assert (out_dir / "m.gguf").read_bytes() == b"previous model"
