"""Plan the conversion of a Voxtral Realtime checkpoint (HF or Mistral layout), engine/GGUF.md first half.

Every spec of ``tensor_map.tensor_specs`` is matched to exactly one checkpoint tensor (aliases must be
equal, a tied output head must equal the embedding, nothing may be left over); the frontend tables
(slaney filterbank, periodic Hann window) are computed.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import numpy as np

from .checkpoint import Checkpoint, open_checkpoint
from .errors import ConversionError
from .frontend import hann_window_periodic, mel_filterbank
from .hparams import ModelParams, params_from_hf, params_from_mistral
from .metadata import add_metadata, resolve_streaming
from .plan import ConversionPlan, OutTensor, file_type
from .tekken import read_tekken
from .tensor_data import arrays_equal
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


def plan_voxtral(src: Path, outtype: str) -> ConversionPlan:
    """Open and validate the checkpoint folder `src`; return the plan that writes its GGUF."""
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
    tensors = [
        _table("audio.mel_filters", mel_filterbank(params.sample_rate, params.n_fft, params.n_mel)),
        _table("audio.window", hann_window_periodic(params.n_fft)),
    ]
    tensors += _match(ckpt, names, tensor_specs(params, ada_dim, ckpt.layout), outtype)
    return ConversionPlan(
        arch=ARCH,
        add_metadata=lambda w: add_metadata(w, params, ada_dim, vocab, streaming, file_type(outtype)),
        tensors=tensors,
    )


def _table(name: str, values: np.ndarray) -> OutTensor:
    return OutTensor(name, tuple(values.shape), "f32", lambda: values)


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
        return p.dec_ada_dim or 32  # the missing tensor is reported by _match
    shape = ckpt.files[stored].entry(stored).shape
    if len(shape) != 2 or (p.dec_ada_dim is not None and shape[0] != p.dec_ada_dim):
        raise ConversionError(
            f"tensor {stored!r} has shape {list(shape)}, "
            f"expected [{p.dec_ada_dim or 'ada_dim'}, {p.dec_n_embd}] from the config"
        )
    return shape[0]


def _match(ckpt: Checkpoint, names: dict[str, str], specs: list[TensorSpec], outtype: str) -> list[OutTensor]:
    """Match every spec to a checkpoint tensor; reject missing, misshapen and unexpected tensors."""
    used: set[str] = set()
    out: list[OutTensor] = []
    embedding = ""
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
        if spec.name == EMBEDDING_NAME:
            embedding = found[0]
        order = rope_row_permutation(spec.shape[0], spec.rope_heads) if spec.rope_heads else None
        load = partial(ckpt.files[found[0]].tensor, found[0])
        out.append(OutTensor(spec.name, spec.shape, outtype if spec.matrix else "f32", load, order))

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
    return out


def _require_equal(ckpt: Checkpoint, a: str, b: str, why: str = "they must be equal") -> None:
    if not arrays_equal(ckpt.files[a].tensor(a), ckpt.files[b].tensor(b)):
        raise ConversionError(f"tensors {a!r} and {b!r} differ; {why}")
