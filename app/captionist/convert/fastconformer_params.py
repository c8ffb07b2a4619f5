"""Hyper-parameters of a FastConformer RNN-T model (engine/GGUF.md "FastConformer RNN-T files").

``fastconformer_hf.py`` and ``fastconformer_nemo.py`` fill `FastConformerParams` from their configs;
`check_params` then rejects anything the engine cannot compute, with one line saying what.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .errors import ConversionError

VARIANTS = ("nemotron_asr_streaming", "nemotron3_5_asr", "parakeet_eou")
JOINT_ACTIVATIONS = ("relu", "tanh", "sigmoid")
CONV_NORMS = ("layer_norm", "batch_norm", "fused_batch_norm")  # fused: already folded (NeMo FusedBatchNorm1d)
LOG_GUARD = 2.0**-24
NORM_EPS = 1e-5  # every LayerNorm (nn.LayerNorm default; neither reference configures it)
BATCH_NORM_EPS = 1e-5  # nn.BatchNorm1d default, as NeMo builds it


@dataclass(frozen=True)
class PromptParams:
    """Nemotron 3.5's language prompt: one-hot slot p of n_prompts is fused into the encoder output."""

    n_prompts: int
    n_ff: int
    default_id: int
    names: list[str]
    ids: list[int]


@dataclass(frozen=True)
class FastConformerParams:
    variant: str
    # audio frontend
    sample_rate: int
    n_fft: int
    win_length: int
    hop_length: int
    n_mel: int
    preemphasis: float
    log_guard: float
    mel_f_min: float
    mel_f_max: float
    table_dtype: str  # "float32" | "bfloat16" | "float16": precision the reference rounds window + filters to
    # encoder
    n_embd: int
    n_layer: int
    n_head: int
    n_ff: int
    conv_kernel: int
    conv_norm: str  # CONV_NORMS
    xscale: float
    sub_factor: int
    sub_channels: int
    sub_kernel: int
    sub_stride: int
    left_context: int
    lookaheads: list[int]  # default first
    attn_bias: bool  # linear layers of attention / feed-forward carry biases
    conv_bias: bool  # pointwise / depthwise convolutions carry biases
    # decoder and joint
    dec_n_embd: int
    dec_n_layer: int
    joint_n_embd: int
    joint_activation: str
    n_vocab: int  # joint outputs, blank included
    blank_id: int
    max_symbols_per_step: int
    prompt: PromptParams | None = None
    norm_eps: float = NORM_EPS

    @property
    def sub_stages(self) -> int:
        return int(math.log2(self.sub_factor))

    @property
    def sub_freq_bins(self) -> int:
        """F': mel bins left after the subsampling stages (the reference's causal-padding formula)."""
        f, k, s = self.n_mel, self.sub_kernel, self.sub_stride
        for _ in range(self.sub_stages):
            f = (f + (k - 1) + (s - 1) - k) // s + 1
        return f


def _fail(message: str) -> None:
    raise ConversionError(message)


def check_params(p: FastConformerParams, where: str) -> None:
    """Reject parameters the engine cannot run; `where` names the config in messages."""
    if p.variant not in VARIANTS:
        _fail(f"{where}: unknown FastConformer variant {p.variant!r}")
    positive = {
        "sample_rate": p.sample_rate,
        "n_fft": p.n_fft,
        "win_length": p.win_length,
        "hop_length": p.hop_length,
        "n_mel": p.n_mel,
        "hidden size": p.n_embd,
        "layer count": p.n_layer,
        "head count": p.n_head,
        "feed-forward size": p.n_ff,
        "conv kernel": p.conv_kernel,
        "subsampling channels": p.sub_channels,
        "subsampling kernel": p.sub_kernel,
        "subsampling stride": p.sub_stride,
        "decoder hidden size": p.dec_n_embd,
        "decoder layer count": p.dec_n_layer,
        "joint hidden size": p.joint_n_embd,
        "max symbols per step": p.max_symbols_per_step,
    }
    for what, value in positive.items():
        if value <= 0:
            _fail(f"{where}: {what} is {value}, expected > 0")
    if p.n_fft % 2 or p.win_length > p.n_fft:
        _fail(f"{where}: n_fft {p.n_fft} must be even and at least win_length {p.win_length}")
    if p.n_embd % p.n_head:
        _fail(f"{where}: hidden size {p.n_embd} is not a multiple of the {p.n_head} attention heads")
    if p.n_embd % 2:
        _fail(f"{where}: hidden size {p.n_embd} must be even for the relative position encoding")
    if p.conv_kernel % 2 == 0:
        _fail(f"{where}: conv kernel {p.conv_kernel} must be odd")
    if p.conv_norm not in CONV_NORMS:
        _fail(f"{where}: conv norm {p.conv_norm!r} is not supported (only {', '.join(CONV_NORMS)})")
    if p.sub_factor < 2 or p.sub_factor & (p.sub_factor - 1):
        _fail(f"{where}: subsampling factor {p.sub_factor} must be a power of 2 (at least 2)")
    if p.sub_kernel < p.sub_stride:
        _fail(f"{where}: subsampling kernel {p.sub_kernel} is smaller than its stride {p.sub_stride}")
    if p.sub_freq_bins <= 0:
        _fail(f"{where}: {p.n_mel} mel bins leave nothing after {p.sub_stages} subsampling stages")
    if p.left_context < 0:
        _fail(f"{where}: unlimited left attention context is not supported (streaming needs a bound)")
    if not p.lookaheads or any(r < 0 for r in p.lookaheads) or len(set(p.lookaheads)) != len(p.lookaheads):
        _fail(f"{where}: lookaheads {p.lookaheads} must be distinct right contexts >= 0 (no unlimited)")
    for what, value in (("preemphasis", p.preemphasis), ("log guard", p.log_guard), ("norm eps", p.norm_eps)):
        if not math.isfinite(value):
            _fail(f"{where}: {what} {value} is not finite")
    if not 0.0 <= p.preemphasis < 1.0:
        _fail(f"{where}: preemphasis {p.preemphasis} must be in [0, 1)")
    if p.log_guard <= 0 or p.norm_eps <= 0 or not math.isfinite(p.xscale) or p.xscale <= 0:
        _fail(f"{where}: log guard, norm eps and input scale must be positive")
    if not 0.0 <= p.mel_f_min < p.mel_f_max <= p.sample_rate / 2:
        _fail(f"{where}: mel range {p.mel_f_min}-{p.mel_f_max} Hz does not fit {p.sample_rate} Hz audio")
    if p.table_dtype not in ("float32", "bfloat16", "float16"):
        _fail(f"{where}: mel_filters_dtype {p.table_dtype!r} is not supported (float32, bfloat16, float16)")
    if p.joint_activation not in JOINT_ACTIVATIONS:
        _fail(
            f"{where}: joint activation {p.joint_activation!r} is not one of {', '.join(JOINT_ACTIVATIONS)}"
        )
    if p.n_vocab < 2 or not 0 <= p.blank_id < p.n_vocab:
        _fail(f"{where}: blank id {p.blank_id} is outside the {p.n_vocab} joint outputs")
    if p.prompt is not None:
        _check_prompt(p.prompt, where)


def _check_prompt(q: PromptParams, where: str) -> None:
    if q.n_prompts <= 0 or q.n_ff <= 0:
        _fail(f"{where}: num_prompts {q.n_prompts} and prompt_intermediate_size {q.n_ff} must be > 0")
    if not 0 <= q.default_id < q.n_prompts:
        _fail(f"{where}: default_prompt_id {q.default_id} is outside the {q.n_prompts} prompt slots")
    if not q.names:
        _fail(f"{where}: the prompt dictionary is empty")
    for name, i in zip(q.names, q.ids, strict=True):
        if not 0 <= i < q.n_prompts:
            _fail(f"{where}: prompt {name!r} has slot {i}, outside the {q.n_prompts} prompt slots")
