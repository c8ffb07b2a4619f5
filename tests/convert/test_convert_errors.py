"""Bad input gives ConversionError with one line, and never leaves a (partial) output file."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from captionist.convert import ConversionError, convert_checkpoint
from captionist.convert import converter as converter_module
from tests.convert.synthetic_checkpoint import (
    SPECIAL_TOKENS,
    Dims,
    hf_state_dict,
    read_safetensors_header,
    tekken,
    write_hf,
    write_mistral,
    write_safetensors,
)

D = Dims()


def _rewrite_json(path: Path, edit: Callable[[dict], None]) -> None:
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))


def _hf_with(sd_edit: Callable[[dict[str, np.ndarray]], None]) -> Callable[[Path], None]:
    def make(src: Path) -> None:
        sd = hf_state_dict(D)
        sd_edit(sd)
        write_hf(src, D, sd)

    return make


def _truncate(src: Path) -> None:
    write_hf(src, D)
    path = src / "model.safetensors"
    path.write_bytes(path.read_bytes()[:-100])


def _cut_header(src: Path) -> None:
    write_hf(src, D)
    path = src / "model.safetensors"
    path.write_bytes(path.read_bytes()[:50])


def _garble_header(src: Path) -> None:
    write_hf(src, D)
    path = src / "model.safetensors"
    data = bytearray(path.read_bytes())
    data[8:20] = b"not json!!!!"
    path.write_bytes(bytes(data))


def _untied_head(sd: dict[str, np.ndarray]) -> None:
    sd["lm_head.weight"] = sd["language_model.model.embed_tokens.weight"] + 1


def _bad_shape(sd: dict[str, np.ndarray]) -> None:
    sd["language_model.model.layers.1.mlp.up_proj.weight"] = np.zeros((D.dec_ff + 1, D.dec_embd), np.float32)


CASES: dict[str, tuple[Callable[[Path], None], str]] = {
    "no config": (lambda src: src.mkdir(), "neither config.json"),
    "no weights": (
        lambda src: (write_hf(src, D), (src / "model.safetensors").unlink()),
        "no model*.safetensors",
    ),
    "no tekken": (lambda src: (write_hf(src, D), (src / "tekken.json").unlink()), "no tekken.json"),
    "corrupt config": (
        lambda src: (write_hf(src, D), (src / "config.json").write_text("{oops")),
        "not valid JSON",
    ),
    "corrupt tekken": (
        lambda src: (write_hf(src, D), (src / "tekken.json").write_text("[1,")),
        "not valid JSON",
    ),
    "unknown model_type": (
        lambda src: (
            write_hf(src, D),
            _rewrite_json(src / "config.json", lambda c: c.update(model_type="llama")),
        ),
        "model_type 'llama'",
    ),
    "config shape mismatch": (
        lambda src: (
            write_hf(src, D),
            _rewrite_json(src / "config.json", lambda c: c["text_config"].update(intermediate_size=32)),
        ),
        "expected [32, 16] from the config",
    ),
    "tensor shape mismatch": (_hf_with(_bad_shape), "layers.1.mlp.up_proj.weight' has shape [25, 16]"),
    "missing tensor": (
        _hf_with(lambda sd: sd.pop("audio_tower.layers.1.self_attn.v_proj.bias")),
        "lacks tensor 'audio_tower.layers.1.self_attn.v_proj.bias'",
    ),
    "extra tensor": (
        _hf_with(
            lambda sd: sd.update(
                {"audio_tower.layers.2.final_layer_norm.weight": np.ones(D.enc_embd, np.float32)}
            )
        ),
        "unexpected tensor 'audio_tower.layers.2.final_layer_norm.weight'",
    ),
    "untied head": (_hf_with(_untied_head), "untied output head"),
    "truncated data": (_truncate, "is truncated"),
    "truncated header": (_cut_header, "truncated or not a safetensors file"),
    "corrupt header": (_garble_header, "corrupt safetensors header"),
    "no streaming specials": (
        lambda src: (
            write_hf(src, D),
            (src / "tekken.json").write_text(json.dumps(tekken(specials=SPECIAL_TOKENS[:32]))),
        ),
        "[STREAMING_PAD], [STREAMING_WORD]",
    ),
    "vocab too small": (
        lambda src: (write_hf(src, D), (src / "tekken.json").write_text(json.dumps(tekken(n_normal=5)))),
        "cannot make the model's vocabulary of 1010",
    ),
    "mistral without weights": (
        lambda src: (write_mistral(src, D), (src / "consolidated.safetensors").unlink()),
        "no consolidated.safetensors",
    ),
    "mistral corrupt params": (
        lambda src: (write_mistral(src, D), (src / "params.json").write_text("")),
        "params.json is not valid JSON",
    ),
    "mistral not realtime": (
        lambda src: (
            write_mistral(src, D),
            _rewrite_json(src / "params.json", lambda p: p.pop("ada_rms_norm_t_cond")),
        ),
        "not a Voxtral Realtime model",
    ),
    "mistral not multimodal": (
        lambda src: (
            write_mistral(src, D),
            _rewrite_json(src / "params.json", lambda p: p.pop("multimodal")),
        ),
        "no 'multimodal' section",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_raises_and_leaves_nothing(case: str, tmp_path: Path) -> None:
    make, expected = CASES[case]
    src, out_dir = tmp_path / "src", tmp_path / "out"
    out_dir.mkdir()
    make(src)
    with pytest.raises(ConversionError) as info:
        convert_checkpoint(src, out_dir / "m.gguf", progress=False)
    message = str(info.value)
    assert expected in message
    assert "\n" not in message
    assert list(out_dir.iterdir()) == []


def test_missing_source_folder(tmp_path: Path) -> None:
    with pytest.raises(ConversionError, match="is not a directory"):
        convert_checkpoint(tmp_path / "nope", tmp_path / "m.gguf", progress=False)


def test_unknown_outtype(tmp_path: Path) -> None:
    write_hf(tmp_path / "src", D)
    with pytest.raises(ConversionError, match="unknown outtype 'q4'"):
        convert_checkpoint(tmp_path / "src", tmp_path / "m.gguf", outtype="q4", progress=False)


def test_failure_while_writing_removes_the_partial_file_and_keeps_old_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_hf(tmp_path / "src", D)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    (out_dir / "m.gguf").write_bytes(b"previous model")
    calls = []
    real = converter_module.convert_rows

    def failing(*args: object, **kwargs: object) -> np.ndarray:
        calls.append(1)
        if len(calls) == 10:
            raise OSError(28, "No space left on device")
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(converter_module, "convert_rows", failing)
    with pytest.raises(ConversionError, match="No space left on device"):
        convert_checkpoint(tmp_path / "src", out_dir / "m.gguf", progress=False)
    assert len(calls) == 10
    assert sorted(p.name for p in out_dir.iterdir()) == ["m.gguf"]
    assert (out_dir / "m.gguf").read_bytes() == b"previous model"


def test_unsupported_safetensors_dtype(tmp_path: Path) -> None:
    sd = write_hf(tmp_path / "src", D)
    tensors = {k: ("F32", v) for k, v in sd.items()}
    tensors["audio_tower.norm.weight"] = ("F64", sd["audio_tower.norm.weight"].astype(np.float64))
    write_safetensors(tmp_path / "src" / "model.safetensors", tensors)
    assert (
        read_safetensors_header(tmp_path / "src" / "model.safetensors")["audio_tower.norm.weight"]["dtype"]
        == "F64"
    )
    with pytest.raises(ConversionError, match="dtype F64; only F32, F16 and BF16"):
        convert_checkpoint(tmp_path / "src", tmp_path / "m.gguf", progress=False)
