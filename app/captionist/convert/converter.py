"""`convert_checkpoint`: a Voxtral Realtime checkpoint (HF or Mistral layout) -> one GGUF model file.

The GGUF layout is specified in engine/GGUF.md. Conversion streams: all tensor infos are declared
first, then each tensor is read (memory-mapped), converted and written in turn, so peak memory is
about one tensor. Output goes to a temporary file next to `out` that is renamed on success and
removed on any failure.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from gguf import GGMLQuantizationType, GGUFWriter, LlamaFileType
from tqdm import tqdm

from .checkpoint import Checkpoint, open_checkpoint
from .errors import ConversionError
from .frontend import hann_window_periodic, mel_filterbank
from .hparams import ModelParams, params_from_hf, params_from_mistral
from .metadata import add_metadata, resolve_streaming
from .tekken import read_tekken
from .tensor_data import OUTTYPES, arrays_equal, convert_rows, storage_type
from .tensor_map import (
    EMBEDDING_NAME,
    TIED_HEADS,
    TensorSpec,
    ada_source_name,
    normalize_hf_name,
    rope_row_permutation,
    tensor_specs,
)

ARCH = "voxtral_realtime"
_FILE_TYPES = {
    "f32": LlamaFileType.ALL_F32,
    "f16": LlamaFileType.MOSTLY_F16,
    "bf16": LlamaFileType.MOSTLY_BF16,
}


@dataclass(frozen=True)
class _Planned:
    spec: TensorSpec
    stored_name: str  # name in the checkpoint file
    outtype: str


def convert_checkpoint(src: Path, out: Path, outtype: str = "f16", progress: bool = True) -> None:
    """Convert the checkpoint directory `src` into the GGUF file `out`.

    `outtype` ("f32", "f16" or "bf16") applies to conv/linear weights and the token embedding;
    norms, biases, ada-norm weights and the frontend tables are always F32. Raises ConversionError
    (one line) on bad input; `out` is then left untouched and no partial file remains.
    """
    if outtype not in OUTTYPES:
        raise ConversionError(f"unknown outtype {outtype!r}; choose one of {', '.join(OUTTYPES)}")
    src, out = Path(src), Path(out)
    if not out.parent.is_dir():
        raise ConversionError(f"output folder {out.parent} does not exist")
    if out.is_dir():
        raise ConversionError(f"output path {out} is a directory")

    ckpt = open_checkpoint(src)
    if ckpt.layout == "hf":
        params = params_from_hf(ckpt.config, ckpt.extra_json)
    else:
        params = params_from_mistral(ckpt.config)
    names = _source_names(ckpt)
    _check_geometry(params)
    ada_dim = _ada_dim(params, ckpt, names)
    vocab = read_tekken(ckpt.tekken_path, params.dec_n_vocab)
    streaming = resolve_streaming(params, vocab)
    plan = _plan(ckpt, names, tensor_specs(params, ada_dim, ckpt.layout), outtype)

    tmp = out.with_name(f".{out.name}.{os.getpid()}.part")
    writer = GGUFWriter(tmp, ARCH)
    try:
        add_metadata(writer, params, ada_dim, vocab, streaming, _FILE_TYPES[outtype])
        _write(writer, ckpt, names, plan, params, progress)
        writer.close()
        os.replace(tmp, out)
    except BaseException as exc:
        try:
            writer.close()
        except Exception:  # noqa: BLE001 - already failing; the original error matters
            pass
        tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise ConversionError(f"cannot write {out}: {exc.strerror or exc}") from exc
        raise


def _source_names(ckpt: Checkpoint) -> dict[str, str]:
    """Canonical source name -> name as stored (HF names normalised, Mistral names as-is)."""
    if ckpt.layout == "mistral":
        return {n: n for n in ckpt.files}
    names: dict[str, str] = {}
    for stored in ckpt.files:
        canonical = normalize_hf_name(stored)
        if canonical in names:
            raise ConversionError(f"checkpoint holds both {names[canonical]!r} and {stored!r}")
        names[canonical] = stored
    return names


def _check_geometry(p: ModelParams) -> None:
    if p.n_fft % 2:
        raise ConversionError(f"n_fft {p.n_fft} must be even")
    for what, head_dim in (("encoder", p.enc_head_dim), ("decoder", p.dec_head_dim)):
        if head_dim % 2:
            raise ConversionError(f"{what} head_dim {head_dim} must be even for RoPE")
    if p.dec_n_head % p.dec_n_head_kv:
        raise ConversionError(
            f"decoder n_heads {p.dec_n_head} is not a multiple of n_kv_heads {p.dec_n_head_kv}"
        )


def _ada_dim(p: ModelParams, ckpt: Checkpoint, names: dict[str, str]) -> int:
    stored = names.get(ada_source_name(ckpt.layout))
    if stored is None:
        return p.dec_ada_dim or 32  # the missing tensor is reported by _plan
    shape = ckpt.files[stored].entry(stored).shape
    if len(shape) != 2 or (p.dec_ada_dim is not None and shape[0] != p.dec_ada_dim):
        raise ConversionError(
            f"tensor {stored!r} has shape {list(shape)}, "
            f"expected [{p.dec_ada_dim or 'ada_dim'}, {p.dec_n_embd}] from the config"
        )
    return shape[0]


def _plan(ckpt: Checkpoint, names: dict[str, str], specs: list[TensorSpec], outtype: str) -> list[_Planned]:
    """Match every spec to a checkpoint tensor; reject missing, misshapen and unexpected tensors."""
    used: set[str] = set()
    plan: list[_Planned] = []
    for spec in specs:
        found = [names[s] for s in spec.sources if s in names]
        if not found:
            raise ConversionError(f"checkpoint lacks tensor {spec.sources[0]!r} (for {spec.name})")
        for stored in found:
            shape = ckpt.files[stored].entry(stored).shape
            if shape != spec.shape:
                raise ConversionError(
                    f"tensor {stored!r} has shape {list(shape)}, expected {list(spec.shape)} from the config"
                )
        for alias in found[1:]:
            _require_equal(ckpt, found[0], alias)
        used.update(found)
        plan.append(_Planned(spec, found[0], outtype if spec.matrix else "f32"))

    embedding = next(p.stored_name for p in plan if p.spec.name == EMBEDDING_NAME)
    for head in TIED_HEADS[ckpt.layout]:
        if head in names:
            stored = names[head]
            if ckpt.files[stored].entry(stored).shape != ckpt.files[embedding].entry(embedding).shape:
                raise ConversionError(f"output head {stored!r} does not have the token embedding's shape")
            _require_equal(ckpt, embedding, stored, "an untied output head is not supported")
            used.add(stored)

    extra = sorted(set(names.values()) - used)
    if extra:
        more = f" (and {len(extra) - 1} more)" if len(extra) > 1 else ""
        raise ConversionError(f"unexpected tensor {extra[0]!r}{more} in the checkpoint")
    return plan


def _require_equal(ckpt: Checkpoint, a: str, b: str, why: str = "they must be equal") -> None:
    if not arrays_equal(ckpt.files[a].tensor(a), ckpt.files[b].tensor(b)):
        raise ConversionError(f"tensors {a!r} and {b!r} differ; {why}")


def _write(
    writer: GGUFWriter,
    ckpt: Checkpoint,
    names: dict[str, str],
    plan: list[_Planned],
    p: ModelParams,
    progress: bool,
) -> None:
    frontend = {
        "audio.mel_filters": mel_filterbank(p.sample_rate, p.n_fft, p.n_mel, 0.0, 8000.0),
        "audio.window": hann_window_periodic(p.n_fft),
    }
    for name, values in frontend.items():
        writer.add_tensor_info(name, values.shape, values.dtype, values.nbytes)
    total = 0
    for item in plan:
        dtype, ggml_type = storage_type(item.outtype)
        nbytes = int(np.prod(item.spec.shape, dtype=np.int64)) * dtype.itemsize
        raw = ggml_type if ggml_type == GGMLQuantizationType.BF16 else None
        writer.add_tensor_info(item.spec.name, item.spec.shape, dtype, nbytes, raw_dtype=raw)
        total += nbytes

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for values in frontend.values():
        writer.write_tensor_data(values)
    with tqdm(total=total, unit="B", unit_scale=True, desc="convert", disable=not progress) as bar:
        for item in plan:
            source = ckpt.files[item.stored_name].tensor(item.stored_name)
            order = (
                rope_row_permutation(item.spec.shape[0], item.spec.rope_heads)
                if item.spec.rope_heads
                else None
            )
            data = convert_rows(source, item.outtype, order)
            writer.write_tensor_data(data)
            bar.update(data.nbytes)
            del data
