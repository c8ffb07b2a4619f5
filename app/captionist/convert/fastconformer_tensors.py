"""FastConformer RNN-T tensors: GGUF name, shape, storage class and the checkpoint tensors they come from.

Names and ggml shapes follow engine/GGUF.md "FastConformer RNN-T files"; checkpoint names follow
transformers' ``NemotronAsrStreamingForRNNT`` / ``Nemotron3_5AsrForRNNT`` (`HF_NAMES`) and NeMo's
``EncDecRNNTBPEModel`` (`NEMO_NAMES`). Shapes here are numpy / PyTorch order (the reverse of ggml order).

Rules: ``copy`` (reshaped, e.g. a [C, C, 1, 1] pointwise conv to [C, C]), ``zeros`` (a bias the model
is built without), ``bn_scale`` / ``bn_shift`` (batch norm folded: ``w = gamma / sqrt(var + eps)``,
``b = beta - mean * w``, float32 as NeMo's ``FusedBatchNorm1d.from_batchnorm``), ``prompt_main`` /
``prompt_lang`` (Nemotron 3.5's ``prompt_projector.linear_1`` split into its encoder columns and its
transposed one-hot columns).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np

from .errors import ConversionError
from .fastconformer_params import BATCH_NORM_EPS, FastConformerParams
from .plan import OutTensor
from .safetensors_file import to_float32
from .tensor_store import TensorStore


@dataclass(frozen=True)
class SourceNames:
    """Checkpoint module names of one layout; sub_dw / sub_pw take {m} = stage - 1, {t} = 3 stage - 1."""

    sub_in: str
    sub_dw: str
    sub_pw: str
    sub_out: str
    attn: dict[str, str]  # GGUF attn_* suffix -> module under the layer's self_attn
    conv_dw_norm: str
    enc_proj: str
    dec_embd: str
    lstm: str
    dec_proj: str
    joint_out: str
    prompt: tuple[str, str] | None


_ATTN = ("attn_q", "attn_k", "attn_v", "attn_out", "attn_pos", "attn_pos_bias_u", "attn_pos_bias_v")
HF_NAMES = SourceNames(
    sub_in="encoder.subsampling.conv_in",
    sub_dw="encoder.subsampling.layers.{m}.depthwise_conv",
    sub_pw="encoder.subsampling.layers.{m}.pointwise_conv",
    sub_out="encoder.subsampling.linear",
    attn=dict(
        zip(
            _ATTN,
            ("q_proj", "k_proj", "v_proj", "o_proj", "relative_k_proj", "bias_u", "bias_v"),
            strict=True,
        )
    ),
    conv_dw_norm="conv.norm",
    enc_proj="encoder_projector",
    dec_embd="decoder.embedding",
    lstm="decoder.lstm",
    dec_proj="decoder.decoder_projector",
    joint_out="joint.head",
    prompt=("prompt_projector.linear_1", "prompt_projector.linear_2"),
)
NEMO_NAMES = SourceNames(
    sub_in="encoder.pre_encode.conv.0",
    sub_dw="encoder.pre_encode.conv.{t}",
    sub_pw="encoder.pre_encode.conv.{u}",
    sub_out="encoder.pre_encode.out",
    attn=dict(
        zip(
            _ATTN,
            ("linear_q", "linear_k", "linear_v", "linear_out", "linear_pos", "pos_bias_u", "pos_bias_v"),
            strict=True,
        )
    ),
    conv_dw_norm="conv.batch_norm",
    enc_proj="joint.enc",
    dec_embd="decoder.prediction.embed",
    lstm="decoder.prediction.dec_rnn.lstm",
    dec_proj="joint.pred",
    joint_out="joint.joint_net.2",  # .1 when the joint has no dropout layer
    prompt=None,
)


@dataclass(frozen=True)
class FcTensor:
    name: str  # GGUF name
    shape: tuple[int, ...]  # numpy order, as written
    matrix: bool  # True: follows the outtype; False: always F32
    rule: str  # copy | zeros | bn_scale | bn_shift | prompt_main | prompt_lang
    sources: tuple[str, ...] = ()
    source_shape: tuple[int, ...] = ()  # expected shape of every source


def fastconformer_tensors(p: FastConformerParams, n: SourceNames) -> list[FcTensor]:
    """Every weight tensor of the GGUF in file order (the frontend tables are added by the planner)."""
    out: list[FcTensor] = []

    def linear(
        name: str, src: str, n_out: int, n_in: int, bias: bool | None, kernel: int | None = None
    ) -> None:
        """A Linear / Conv1d(k=1) weight [out, in(, 1)] and its bias (None: no bias tensor at all)."""
        source_shape = (n_out, n_in) if kernel is None else (n_out, n_in, kernel)
        out.append(FcTensor(f"{name}.weight", (n_out, n_in), True, "copy", (f"{src}.weight",), source_shape))
        if bias is not None:
            vector(f"{name}.bias", f"{src}.bias", n_out, bias)

    def vector(name: str, src: str, size: int, present: bool = True) -> None:
        if present:
            out.append(FcTensor(name, (size,), False, "copy", (src,), (size,)))
        else:
            out.append(FcTensor(name, (size,), False, "zeros"))

    def norm(name: str, src: str, size: int) -> None:
        vector(f"{name}.weight", f"{src}.weight", size)
        vector(f"{name}.bias", f"{src}.bias", size)

    e, c, k, hd = p.n_embd, p.sub_channels, p.sub_kernel, p.n_embd // p.n_head
    out.append(
        FcTensor("enc.sub.0.weight", (c, 1, k, k), False, "copy", (f"{n.sub_in}.weight",), (c, 1, k, k))
    )
    vector("enc.sub.0.bias", f"{n.sub_in}.bias", c)
    for s in range(1, p.sub_stages):
        idx = {"m": s - 1, "t": 3 * s - 1, "u": 3 * s}
        dw, pw = n.sub_dw.format(**idx), n.sub_pw.format(**idx)
        out.append(
            FcTensor(f"enc.sub.{s}.dw.weight", (c, 1, k, k), False, "copy", (f"{dw}.weight",), (c, 1, k, k))
        )
        vector(f"enc.sub.{s}.dw.bias", f"{dw}.bias", c)
        out.append(FcTensor(f"enc.sub.{s}.pw.weight", (c, c), False, "copy", (f"{pw}.weight",), (c, c, 1, 1)))
        vector(f"enc.sub.{s}.pw.bias", f"{pw}.bias", c)
    linear("enc.sub.out", n.sub_out, e, c * p.sub_freq_bins, True)

    ab, cb = p.attn_bias, p.conv_bias
    for i in range(p.n_layer):
        g, h = f"enc.blk.{i}.", f"encoder.layers.{i}."
        for ffn in ("1", "2"):
            norm(f"{g}ffn{ffn}_norm", f"{h}norm_feed_forward{ffn}", e)
            linear(f"{g}ffn{ffn}_up", f"{h}feed_forward{ffn}.linear1", p.n_ff, e, ab)
            linear(f"{g}ffn{ffn}_down", f"{h}feed_forward{ffn}.linear2", e, p.n_ff, ab)
            if ffn == "1":
                norm(f"{g}attn_norm", f"{h}norm_self_att", e)
                for suffix in ("attn_q", "attn_k", "attn_v", "attn_out"):
                    linear(g + suffix, f"{h}self_attn.{n.attn[suffix]}", e, e, ab)
                linear(g + "attn_pos", f"{h}self_attn.{n.attn['attn_pos']}", e, e, None)
                for suffix in ("attn_pos_bias_u", "attn_pos_bias_v"):
                    src = f"{h}self_attn.{n.attn[suffix]}"
                    out.append(FcTensor(g + suffix, (p.n_head, hd), False, "copy", (src,), (p.n_head, hd)))
                norm(f"{g}conv_norm", f"{h}norm_conv", e)
                linear(f"{g}conv_pw1", f"{h}conv.pointwise_conv1", 2 * e, e, cb, kernel=1)
                dw = f"{h}conv.depthwise_conv"
                out.append(
                    FcTensor(
                        f"{g}conv_dw.weight",
                        (e, p.conv_kernel),
                        False,
                        "copy",
                        (f"{dw}.weight",),
                        (e, 1, p.conv_kernel),
                    )
                )
                vector(f"{g}conv_dw.bias", f"{dw}.bias", e, cb)
                out += _dw_norm(p, f"{g}conv_dw_norm", h + n.conv_dw_norm)
                linear(f"{g}conv_pw2", f"{h}conv.pointwise_conv2", e, e, cb, kernel=1)
        norm(f"{g}out_norm", f"{h}norm_out", e)

    linear("enc.proj", n.enc_proj, p.joint_n_embd, e, True)
    if p.prompt is not None:
        if n.prompt is None:
            raise ConversionError("this checkpoint layout has no language-prompt projector")
        fc1, fc2 = n.prompt
        q = p.prompt
        w1 = (f"{fc1}.weight",)
        out.append(
            FcTensor("prompt.fc1.weight", (q.n_ff, e), True, "prompt_main", w1, (q.n_ff, e + q.n_prompts))
        )
        out.append(
            FcTensor(
                "prompt.fc1_lang.weight",
                (q.n_prompts, q.n_ff),
                False,
                "prompt_lang",
                w1,
                (q.n_ff, e + q.n_prompts),
            )
        )
        vector("prompt.fc1.bias", f"{fc1}.bias", q.n_ff)
        linear("prompt.fc2", fc2, e, q.n_ff, True)

    hdec, v = p.dec_n_embd, p.n_vocab
    out.append(FcTensor("dec.embd.weight", (v, hdec), True, "copy", (f"{n.dec_embd}.weight",), (v, hdec)))
    for layer in range(p.dec_n_layer):
        for kind in ("ih", "hh"):
            w = f"{n.lstm}.weight_{kind}_l{layer}"
            out.append(
                FcTensor(f"dec.lstm.{layer}.w_{kind}", (4 * hdec, hdec), True, "copy", (w,), (4 * hdec, hdec))
            )
        for kind in ("ih", "hh"):
            vector(f"dec.lstm.{layer}.b_{kind}", f"{n.lstm}.bias_{kind}_l{layer}", 4 * hdec)
    linear("dec.proj", n.dec_proj, p.joint_n_embd, hdec, True)
    linear("joint.out", n.joint_out, v, p.joint_n_embd, True)
    return out


def _dw_norm(p: FastConformerParams, name: str, src: str) -> list[FcTensor]:
    e = p.n_embd
    if p.conv_norm == "batch_norm":
        stats = tuple(f"{src}.{x}" for x in ("weight", "bias", "running_mean", "running_var"))
        return [
            FcTensor(f"{name}.weight", (e,), False, "bn_scale", stats, (e,)),
            FcTensor(f"{name}.bias", (e,), False, "bn_shift", stats, (e,)),
        ]
    # layer_norm: gamma / beta; fused_batch_norm: already x * w + b
    return [FcTensor(f"{name}.{x}", (e,), False, "copy", (f"{src}.{x}",), (e,)) for x in ("weight", "bias")]


def _produce(t: FcTensor, store: TensorStore, n_embd: int) -> np.ndarray:
    if t.rule == "zeros":
        return np.zeros(t.shape, dtype=np.float32)
    if t.rule == "copy":
        return store.load(t.sources[0]).reshape(t.shape)
    if t.rule in ("bn_scale", "bn_shift"):
        gamma, beta, mean, var = (to_float32(store.load(s)) for s in t.sources)
        scale = gamma / np.sqrt(var + np.float32(BATCH_NORM_EPS))
        return scale if t.rule == "bn_scale" else beta - mean * scale
    w = store.load(t.sources[0])
    if t.rule == "prompt_main":
        return np.ascontiguousarray(w[:, :n_embd])
    if t.rule == "prompt_lang":
        return np.ascontiguousarray(w[:, n_embd:].T)
    raise AssertionError(f"unknown rule {t.rule}")


def plan_fastconformer_tensors(
    specs: list[FcTensor], store: TensorStore, p: FastConformerParams, outtype: str, ignored: set[str]
) -> list[OutTensor]:
    """Match specs to the store (missing, misshapen and left-over tensors are errors; `ignored` may stay)."""
    used: set[str] = set()
    out: list[OutTensor] = []
    names = set(store.names())
    for t in specs:
        for src in t.sources:
            if src not in names:
                raise ConversionError(f"checkpoint lacks tensor {src!r} (for {t.name})")
            shape = tuple(store.shape(src))
            if shape != t.source_shape:
                raise ConversionError(
                    f"tensor {src!r} has shape {list(shape)}, expected {list(t.source_shape)} from the config"
                )
        used.update(t.sources)
        load = partial(_produce, t, store, p.n_embd)
        out.append(OutTensor(t.name, t.shape, outtype if t.matrix else "f32", load))
    extra = sorted(names - used - ignored)
    if extra:
        more = f" (and {len(extra) - 1} more)" if len(extra) > 1 else ""
        raise ConversionError(f"unexpected tensor {extra[0]!r}{more} in the checkpoint")
    return out
