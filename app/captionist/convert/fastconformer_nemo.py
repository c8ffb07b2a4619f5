"""Plan the conversion of a NeMo cache-aware FastConformer RNN-T BPE model (Parakeet Realtime EOU).

Reads ``model_config.yaml`` (``target`` ``EncDecRNNTBPEModel`` or ``EncDecRNNTBPEEOUModel``), the
SentencePiece tokenizer and ``model_weights.ckpt`` (torch zip, read without torch). Only the streaming
configuration the engine computes is accepted: ``dw_striding`` causal subsampling, ``rel_pos``
attention in the ``chunked_limited`` style, causal depthwise convolutions, an unnormalised log-mel
frontend. ``att_context_size`` gives the lookaheads (one ``[left, right]`` pair or a list of them, the
first being the default; every pair must share the left context). The blank is the extra id after the
tokenizer's pieces; the frontend tables are the preprocessor's own ``window`` / ``fb`` buffers.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from .config_values import get_bool, get_float, get_int, get_str, int_list, section
from .errors import ConversionError
from .fastconformer_metadata import ARCH, add_fastconformer_metadata
from .fastconformer_params import LOG_GUARD, FastConformerParams, check_params
from .fastconformer_tensors import NEMO_NAMES, fastconformer_tensors, plan_fastconformer_tensors
from .frontend import hann_window_symmetric, mel_filterbank_f32
from .nemo_archive import NemoArchive, open_nemo
from .piece_vocab import PieceVocab, check_against_joint
from .plan import ConversionPlan, OutTensor, file_type
from .safetensors_file import to_float32
from .sentencepiece_vocab import parse_sentencepiece
from .tensor_store import TorchStore
from .torch_zip import read_torch_zip

MODEL_CLASSES = ("EncDecRNNTBPEModel", "EncDecRNNTBPEEOUModel")
_WINDOW, _FILTERS = "preprocessor.featurizer.window", "preprocessor.featurizer.fb"
_W = "model_config.yaml"


def plan_fastconformer_nemo(src: Path, outtype: str, workdir: Path) -> ConversionPlan:
    """Open and validate `src` (.nemo file or extracted folder); return the plan that writes its GGUF."""
    archive = open_nemo(src)
    try:
        return _plan(archive, outtype, workdir)
    except BaseException:
        archive.close()
        raise


def _plan(archive: NemoArchive, outtype: str, workdir: Path) -> ConversionPlan:
    cfg = archive.config
    params, joint_dropout = params_from_nemo(cfg)
    vocab = _tokenizer(archive, cfg)
    check_against_joint(vocab, params.n_vocab, params.blank_id, "the SentencePiece tokenizer")
    if not archive.has("model_weights.ckpt"):
        raise ConversionError(f"{archive.source.name} has no model_weights.ckpt")
    where = archive.byte_range("model_weights.ckpt", workdir)
    store = TorchStore(read_torch_zip(where.path, where.offset, where.size, "model_weights.ckpt"))

    # the joint's Linear follows its activation (and a Dropout layer when the config has one)
    names = NEMO_NAMES if joint_dropout else replace(NEMO_NAMES, joint_out="joint.joint_net.1")
    specs = fastconformer_tensors(params, names)
    ignored = {n for n in store.names() if n.endswith(".num_batches_tracked")} | {_WINDOW, _FILTERS}
    tensors = _frontend(params, store) + plan_fastconformer_tensors(specs, store, params, outtype, ignored)
    return ConversionPlan(
        arch=ARCH,
        add_metadata=lambda w: add_fastconformer_metadata(w, params, vocab, file_type(outtype)),
        tensors=tensors,
        close=archive.close,
    )


def _frontend(p: FastConformerParams, store: TorchStore) -> list[OutTensor]:
    """The preprocessor's own window and filterbank buffers, else the same tables computed."""
    n_freq = p.n_fft // 2 + 1
    names = set(store.names())
    if _FILTERS in names:
        if store.shape(_FILTERS) != (1, p.n_mel, n_freq):
            raise ConversionError(
                f"tensor {_FILTERS!r} has shape {list(store.shape(_FILTERS))}, "
                f"expected {[1, p.n_mel, n_freq]} from the config"
            )
        filters = np.ascontiguousarray(to_float32(store.load(_FILTERS))[0].T)
    else:
        filters = mel_filterbank_f32(p.sample_rate, p.n_fft, p.n_mel, p.mel_f_min, p.mel_f_max)
    if _WINDOW in names:
        if store.shape(_WINDOW) != (p.win_length,):
            raise ConversionError(
                f"tensor {_WINDOW!r} has shape {list(store.shape(_WINDOW))}, "
                f"expected [{p.win_length}] from the config"
            )
        window = to_float32(store.load(_WINDOW))
    else:
        window = hann_window_symmetric(p.win_length)
    return [
        OutTensor("audio.mel_filters", filters.shape, "f32", lambda: filters),
        OutTensor("audio.window", window.shape, "f32", lambda: window),
    ]


def _tokenizer(archive: NemoArchive, cfg: dict[str, Any]) -> PieceVocab:
    tok = section(cfg, "tokenizer", _W)
    kind = get_str(tok, "type", f"{_W} tokenizer", "bpe")
    if kind != "bpe":
        raise ConversionError(f"{_W} tokenizer type is {kind!r}; only SentencePiece ('bpe') is supported")
    ref = tok.get("model_path")
    name = Path(str(ref).removeprefix("nemo:")).name if ref else ""
    if not archive.has(name):
        found = [n for n in archive.names() if n.endswith("tokenizer.model")]
        if len(found) != 1:
            raise ConversionError(f"{archive.source.name} has no SentencePiece tokenizer.model")
        name = found[0]
    return parse_sentencepiece(archive.read_small(name), name)


def _require(value: Any, allowed: tuple[Any, ...], what: str, why: str) -> None:
    if value not in allowed:
        raise ConversionError(f"{_W} {what} is {value!r}; {why}")


def params_from_nemo(cfg: dict[str, Any]) -> tuple[FastConformerParams, bool]:
    """FastConformerParams from model_config.yaml, and whether the joint has a dropout layer."""
    target = str(cfg.get("target") or cfg.get("_target_") or "")
    if target.rsplit(".", 1)[-1] not in MODEL_CLASSES:
        raise ConversionError(
            f"{_W} target is {target or None!r}; "
            f"only NeMo RNN-T BPE models ({', '.join(MODEL_CLASSES)}) are supported"
        )
    pre, enc = section(cfg, "preprocessor", _W), section(cfg, "encoder", _W)
    dec, joint = section(cfg, "decoder", _W), section(cfg, "joint", _W)
    pw, ew, dw, jw = (f"{_W} {s}" for s in ("preprocessor", "encoder", "decoder", "joint"))

    sample_rate = get_int(pre, "sample_rate", pw, cfg.get("sample_rate") or 16000)
    win = get_int(pre, "n_window_size", pw, int(get_float(pre, "window_size", pw, 0.02) * sample_rate))
    hop = get_int(pre, "n_window_stride", pw, int(get_float(pre, "window_stride", pw, 0.01) * sample_rate))
    n_mel = get_int(pre, "features", pw, 64)
    normalize = pre.get("normalize", "per_feature")
    _require(
        normalize if normalize not in (None, "NA", "none", "") else "NA",
        ("NA",),
        "preprocessor normalize",
        "the engine uses unnormalised log-mel features (normalize: NA)",
    )
    _require(get_str(pre, "window", pw, "hann"), ("hann",), "preprocessor window", "only 'hann' is supported")
    _require(get_bool(pre, "log", pw, True), (True,), "preprocessor log", "log-mel features are required")
    _require(
        get_str(pre, "log_zero_guard_type", pw, "add"),
        ("add",),
        "preprocessor log_zero_guard_type",
        "only 'add' is supported",
    )
    _require(
        get_float(pre, "mag_power", pw, 2.0), (2.0,), "preprocessor mag_power", "only 2 (power) is supported"
    )
    _require(
        get_int(pre, "frame_splicing", pw, 1), (1,), "preprocessor frame_splicing", "only 1 is supported"
    )
    _require(get_bool(pre, "exact_pad", pw, False), (False,), "preprocessor exact_pad", "centred frames only")
    _require(
        pre.get("mel_norm", "slaney"), ("slaney",), "preprocessor mel_norm", "only 'slaney' is supported"
    )
    guard = pre.get("log_zero_guard_value", LOG_GUARD)
    guard = {"tiny": float(np.finfo(np.float32).tiny), "eps": float(np.finfo(np.float32).eps)}.get(
        guard, guard
    )

    _require(
        str(enc.get("_target_", "")).rsplit(".", 1)[-1],
        ("ConformerEncoder",),
        "encoder _target_",
        "only NeMo's ConformerEncoder is supported",
    )
    d_model = get_int(enc, "d_model", ew)
    if get_int(enc, "feat_in", ew, n_mel) != n_mel:
        raise ConversionError(f"{ew} feat_in {enc['feat_in']} != preprocessor features {n_mel}")
    _require(
        enc.get("subsampling", "striding"),
        ("dw_striding",),
        "encoder subsampling",
        "only depthwise-separable 'dw_striding' subsampling is supported",
    )
    _require(
        get_bool(enc, "causal_downsampling", ew, False),
        (True,),
        "encoder causal_downsampling",
        "the engine streams with causal subsampling only",
    )
    _require(
        enc.get("self_attention_model", "rel_pos"),
        ("rel_pos",),
        "encoder self_attention_model",
        "only 'rel_pos' attention is supported",
    )
    _require(
        enc.get("att_context_style", "regular"),
        ("chunked_limited",),
        "encoder att_context_style",
        "the engine computes only 'chunked_limited' cache-aware attention",
    )
    kernel = get_int(enc, "conv_kernel_size", ew, 31)
    conv_ctx = enc.get("conv_context_size")
    if conv_ctx != "causal" and conv_ctx != [kernel - 1, 0]:
        raise ConversionError(
            f"{ew} conv_context_size is {conv_ctx!r}; the engine needs 'causal' convolutions"
        )
    _require(
        enc.get("conv_context_style", "regular"),
        ("regular",),
        "encoder conv_context_style",
        "only 'regular' is supported",
    )
    _require(
        enc.get("feat_out", -1), (-1, d_model), "encoder feat_out", "an output projection is not supported"
    )
    _require(enc.get("reduction"), (None,), "encoder reduction", "time reduction is not supported")
    _require(enc.get("global_tokens", 0), (0,), "encoder global_tokens", "global tokens are not supported")
    left, lookaheads = _context(enc.get("att_context_size"))
    channels = get_int(enc, "subsampling_conv_channels", ew, -1, minimum=-1)
    use_bias = get_bool(enc, "use_bias", ew, True)

    prednet, jointnet = section(dec, "prednet", dw), section(joint, "jointnet", jw)
    pred_hidden = get_int(prednet, "pred_hidden", f"{dw} prednet")
    _require(
        get_int(prednet, "rnn_hidden_size", f"{dw} prednet", -1, minimum=-1),
        (-1, pred_hidden),
        "decoder prednet rnn_hidden_size",
        "a projected LSTM is not supported",
    )
    _require(
        get_bool(dec, "blank_as_pad", dw, True),
        (True,),
        "decoder blank_as_pad",
        "the blank must be an embedding row",
    )
    _require(
        dec.get("normalization_mode"),
        (None,),
        "decoder normalization_mode",
        "a normalised LSTM is not supported",
    )
    _require(
        get_int(joint, "num_extra_outputs", jw, 0, minimum=0),
        (0,),
        "joint num_extra_outputs",
        "TDT duration outputs are not supported",
    )
    num_classes = get_int(joint, "num_classes", jw)
    _require(
        get_int(dec, "vocab_size", dw, num_classes),
        (num_classes,),
        "decoder vocab_size",
        f"it must equal joint num_classes {num_classes}",
    )
    _require(
        get_int(jointnet, "encoder_hidden", f"{jw} jointnet", d_model),
        (d_model,),
        "joint encoder_hidden",
        f"it must equal encoder d_model {d_model}",
    )
    _require(
        get_int(jointnet, "pred_hidden", f"{jw} jointnet", pred_hidden),
        (pred_hidden,),
        "joint pred_hidden",
        f"it must equal decoder pred_hidden {pred_hidden}",
    )
    greedy = section(section(cfg, "decoding", _W, required=False), "greedy", f"{_W} decoding", required=False)

    params = FastConformerParams(
        variant="parakeet_eou",
        sample_rate=sample_rate,
        n_fft=get_int(pre, "n_fft", pw, 2 ** math.ceil(math.log2(win))),
        win_length=win,
        hop_length=hop,
        n_mel=n_mel,
        preemphasis=get_float(pre, "preemph", pw, 0.0) if "preemph" in pre else 0.97,
        log_guard=get_float({"v": guard}, "v", f"{pw} log_zero_guard_value"),
        mel_f_min=get_float(pre, "lowfreq", pw, 0.0),
        mel_f_max=get_float(pre, "highfreq", pw, sample_rate / 2),
        table_dtype="float32",
        n_embd=d_model,
        n_layer=get_int(enc, "n_layers", ew),
        n_head=get_int(enc, "n_heads", ew, 4),
        n_ff=d_model * get_int(enc, "ff_expansion_factor", ew, 4),
        conv_kernel=kernel,
        conv_norm=get_str(enc, "conv_norm_type", ew, "batch_norm"),
        xscale=math.sqrt(d_model) if get_bool(enc, "xscaling", ew, True) else 1.0,
        sub_factor=get_int(enc, "subsampling_factor", ew, 4),
        sub_channels=d_model if channels == -1 else channels,
        sub_kernel=3,  # NeMo's dw_striding is fixed at kernel 3, stride 2
        sub_stride=2,
        left_context=left,
        lookaheads=lookaheads,
        attn_bias=use_bias,
        conv_bias=use_bias,
        dec_n_embd=pred_hidden,
        dec_n_layer=get_int(prednet, "pred_rnn_layers", f"{dw} prednet"),
        joint_n_embd=get_int(jointnet, "joint_hidden", f"{jw} jointnet"),
        joint_activation=str(jointnet.get("activation", "")).lower(),
        n_vocab=num_classes + 1,
        blank_id=num_classes,
        max_symbols_per_step=get_int(greedy, "max_symbols", f"{_W} decoding.greedy", 10),
    )
    check_params(params, _W)
    return params, bool(get_float(jointnet, "dropout", f"{jw} jointnet", 0.0))


def _context(value: Any) -> tuple[int, list[int]]:
    """(left context, lookaheads) from att_context_size: [left, right] or [[left, right], ...]."""
    what = f"{_W} encoder att_context_size"
    if value is None:
        raise ConversionError(f"{what} is unset (unlimited context); streaming needs a bounded context")
    pairs = value if isinstance(value, list) and value and isinstance(value[0], list) else [value]
    pairs = [int_list(pair, what, minimum=-1) for pair in pairs]
    if any(len(pair) != 2 for pair in pairs):
        raise ConversionError(f"{what} is {value!r}; expected [left, right] pairs")
    lefts = {pair[0] for pair in pairs}
    if len(lefts) != 1:
        raise ConversionError(f"{what} is {value!r}; every lookahead must share one left context")
    if any(-1 in pair for pair in pairs):
        raise ConversionError(f"{what} is {value!r}; unlimited (-1) contexts cannot be streamed")
    return pairs[0][0], [pair[1] for pair in pairs]
