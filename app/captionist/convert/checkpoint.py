"""Find and open a Voxtral Realtime checkpoint directory in either supported layout.

* ``hf``: a Hugging Face ``save_pretrained`` directory: ``config.json`` plus ``model.safetensors`` or
  shards listed in ``model.safetensors.index.json`` (or ``model-*.safetensors`` without an index).
* ``mistral``: Mistral's original release: ``params.json`` plus ``consolidated*.safetensors``.

A directory holding both (the hub repository ships both) is read as ``hf`` when its HF weights exist.

Both need ``tekken.json`` next to the weights.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from .errors import ConversionError
from .safetensors_file import SafetensorsFile

Layout = Literal["hf", "mistral"]


@dataclass
class Checkpoint:
    """An opened checkpoint: its layout, raw config JSON and where every tensor lives."""

    src: Path
    layout: Layout
    config: dict[str, Any]  # config.json (hf) or params.json (mistral)
    tekken_path: Path
    files: dict[str, SafetensorsFile]  # tensor name as stored -> the file holding it
    extra_json: dict[str, Any]  # hf: preprocessor_config.json when present, else {}


def open_checkpoint(src: Path) -> Checkpoint:
    """Detect the layout of `src` and open its config and safetensors files (headers only)."""
    if not src.is_dir():
        raise ConversionError(f"{src} is not a directory (expected a Hugging Face or Mistral checkpoint)")
    has_hf_weights = (src / "model.safetensors.index.json").is_file() or any(src.glob("model*.safetensors"))
    if (src / "config.json").is_file() and (has_hf_weights or not (src / "params.json").is_file()):
        layout: Layout = "hf"
        config = read_json(src / "config.json")
        shard_paths = hf_shard_paths(src)
        extra = (
            read_json(src / "preprocessor_config.json")
            if (src / "preprocessor_config.json").is_file()
            else {}
        )
    elif (src / "params.json").is_file():
        layout = "mistral"
        config = read_json(src / "params.json")
        shard_paths = sorted(src.glob("consolidated*.safetensors"))
        if not shard_paths:
            raise ConversionError(f"{src} has params.json but no consolidated.safetensors")
        extra = {}
    else:
        raise ConversionError(f"{src} has neither config.json (Hugging Face) nor params.json (Mistral)")

    tekken_path = src / "tekken.json"
    if not tekken_path.is_file():
        raise ConversionError(f"{src} has no tekken.json (the tokenizer is needed in the model file)")

    return Checkpoint(src, layout, config, tekken_path, open_safetensors(shard_paths), extra)


def open_safetensors(paths: list[Path]) -> dict[str, SafetensorsFile]:
    """Tensor name -> the file holding it, over all `paths` (headers only); duplicates are errors."""
    files: dict[str, SafetensorsFile] = {}
    for path in paths:
        st = SafetensorsFile(path)
        for name in st.names():
            if name in files:
                raise ConversionError(
                    f"tensor {name!r} occurs in both {files[name].path.name} and {path.name}"
                )
            files[name] = st
    return files


def read_json(path: Path) -> dict[str, Any]:
    """Parse a JSON object file; any problem becomes a one-line ConversionError."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConversionError(f"cannot read {path}: {exc.strerror or exc}") from exc
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConversionError(f"{path.name} is not valid JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise ConversionError(f"{path.name} is not a JSON object")
    return data


def hf_shard_paths(src: Path) -> list[Path]:
    """The safetensors files of a save_pretrained folder: the index's shards, model.safetensors or model-*."""
    index_path = src / "model.safetensors.index.json"
    if index_path.is_file():
        weight_map = read_json(index_path).get("weight_map")
        if not isinstance(weight_map, dict) or not weight_map:
            raise ConversionError(f"{index_path.name} has no weight_map")
        paths = [src / name for name in sorted(set(map(str, weight_map.values())))]
        for p in paths:
            if not p.is_file():
                raise ConversionError(f"{index_path.name} lists {p.name}, which is missing")
        return paths
    single = src / "model.safetensors"
    if single.is_file():
        return [single]
    shards = sorted(src.glob("model-*.safetensors"))
    if not shards:
        raise ConversionError(f"{src} has config.json but no model*.safetensors")
    return shards
