"""Tiny synthetic FastConformer RNN-T checkpoints (HF folders, NeMo .nemo archives), numpy only.

Names and shapes follow transformers' ``NemotronAsrStreamingForRNNT`` / ``Nemotron3_5AsrForRNNT`` and
NeMo's ``EncDecRNNTBPEModel`` state dicts (as listed by the references for tiny random models).
"""

from __future__ import annotations

import io
import json
import tarfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from tests.convert.synthetic_checkpoint import write_safetensors
from tests.convert.torch_checkpoint import (
    SP_BYTE,
    SP_CONTROL,
    SP_NORMAL,
    SP_UNKNOWN,
    SP_USER_DEFINED,
    sentencepiece_bytes,
    torch_zip_bytes,
)


@dataclass(frozen=True)
class Dims:
    n_mel: int = 32
    embd: int = 16
    heads: int = 2
    ff: int = 32
    layers: int = 2
    kernel: int = 5
    channels: int = 8
    factor: int = 8
    pred: int = 12
    pred_layers: int = 2
    joint: int = 10  # NeMo only (HF joins at the decoder width)
    prompts: int = 4
    prompt_ff: int = 20

    @property
    def freq_bins(self) -> int:
        f = self.n_mel
        for _ in range(int(np.log2(self.factor))):
            f = (f + 2 + 1 - 3) // 2 + 1
        return f


# ids 0..2 control, then words and letters, byte pieces, <EOU> / <EOB> user-defined
SPM_PIECES = (
    [("<unk>", SP_UNKNOWN), ("<s>", SP_CONTROL), ("</s>", SP_CONTROL)]
    + [(w, SP_NORMAL) for w in ("▁hello", "▁world", "▁a", "b", "c", "▁")]
    + [("<0x41>", SP_BYTE), ("<0xC3>", SP_BYTE)]
    + [("<EOU>", SP_USER_DEFINED), ("<EOB>", SP_USER_DEFINED)]
)


def _rand(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return (rng.standard_normal(shape) * 0.1).astype(np.float32)


def _encoder_layers(sd: dict, rng: np.random.Generator, d: Dims, names: dict[str, str], bias: bool) -> None:
    e, hd = d.embd, d.embd // d.heads
    for i in range(d.layers):
        p = f"encoder.layers.{i}."
        for n in ("norm_feed_forward1", "norm_self_att", "norm_conv", "norm_feed_forward2", "norm_out"):
            sd[p + n + ".weight"], sd[p + n + ".bias"] = 1 + _rand(rng, e), _rand(rng, e)
        shapes = {"feed_forward1.linear1": (d.ff, e), "feed_forward1.linear2": (e, d.ff)}
        shapes |= {k.replace("1.", "2.", 1): v for k, v in shapes.items()}
        shapes |= {f"self_attn.{names[x]}": (e, e) for x in ("q", "k", "v", "o")}
        for n, shape in shapes.items():
            sd[p + n + ".weight"] = _rand(rng, *shape)
            if bias:
                sd[p + n + ".bias"] = _rand(rng, shape[0])
        sd[p + f"self_attn.{names['pos']}.weight"] = _rand(rng, e, e)
        sd[p + f"self_attn.{names['u']}"] = _rand(rng, d.heads, hd)
        sd[p + f"self_attn.{names['v_bias']}"] = _rand(rng, d.heads, hd)
        for n, shape in {
            "conv.pointwise_conv1": (2 * e, e, 1),
            "conv.depthwise_conv": (e, 1, d.kernel),
            "conv.pointwise_conv2": (e, e, 1),
        }.items():
            sd[p + n + ".weight"] = _rand(rng, *shape)
            if bias:
                sd[p + n + ".bias"] = _rand(rng, shape[0])


def hf_state_dict(d: Dims, prompt: bool = False, bias: bool = True, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    c, e, h, v = d.channels, d.embd, d.pred, len(SPM_PIECES) + 1
    sd = {
        "encoder.subsampling.conv_in.weight": _rand(rng, c, 1, 3, 3),
        "encoder.subsampling.conv_in.bias": _rand(rng, c),
    }
    for s in range(int(np.log2(d.factor)) - 1):
        p = f"encoder.subsampling.layers.{s}."
        sd[p + "depthwise_conv.weight"], sd[p + "depthwise_conv.bias"] = _rand(rng, c, 1, 3, 3), _rand(rng, c)
        sd[p + "pointwise_conv.weight"], sd[p + "pointwise_conv.bias"] = _rand(rng, c, c, 1, 1), _rand(rng, c)
    sd["encoder.subsampling.linear.weight"] = _rand(rng, e, c * d.freq_bins)
    sd["encoder.subsampling.linear.bias"] = _rand(rng, e)
    names = {
        "q": "q_proj",
        "k": "k_proj",
        "v": "v_proj",
        "o": "o_proj",
        "pos": "relative_k_proj",
        "u": "bias_u",
    }
    _encoder_layers(sd, rng, d, names | {"v_bias": "bias_v"}, bias)
    for i in range(d.layers):
        sd[f"encoder.layers.{i}.conv.norm.weight"] = 1 + _rand(rng, e)
        sd[f"encoder.layers.{i}.conv.norm.bias"] = _rand(rng, e)
    sd["encoder_projector.weight"], sd["encoder_projector.bias"] = _rand(rng, h, e), _rand(rng, h)
    if prompt:
        sd["prompt_projector.linear_1.weight"] = _rand(rng, d.prompt_ff, e + d.prompts)
        sd["prompt_projector.linear_1.bias"] = _rand(rng, d.prompt_ff)
        sd["prompt_projector.linear_2.weight"] = _rand(rng, e, d.prompt_ff)
        sd["prompt_projector.linear_2.bias"] = _rand(rng, e)
    sd["decoder.embedding.weight"] = _rand(rng, v, h)
    for layer in range(d.pred_layers):
        for kind in ("ih", "hh"):
            sd[f"decoder.lstm.weight_{kind}_l{layer}"] = _rand(rng, 4 * h, h)
            sd[f"decoder.lstm.bias_{kind}_l{layer}"] = _rand(rng, 4 * h)
    sd["decoder.decoder_projector.weight"], sd["decoder.decoder_projector.bias"] = (
        _rand(rng, h, h),
        _rand(rng, h),
    )
    sd["joint.head.weight"], sd["joint.head.bias"] = _rand(rng, v, h), _rand(rng, v)
    return sd


def hf_config(d: Dims, prompt: bool = False, bias: bool = True) -> dict:
    v = len(SPM_PIECES) + 1
    config = {
        "model_type": "nemotron3_5_asr" if prompt else "nemotron_asr_streaming",
        "vocab_size": v,
        "blank_token_id": v - 1,
        "decoder_hidden_size": d.pred,
        "num_decoder_layers": d.pred_layers,
        "hidden_act": "relu",
        "max_symbols_per_step": 7,
        "encoder_config": {
            "model_type": "nemotron_asr_streaming_encoder",
            "hidden_size": d.embd,
            "num_hidden_layers": d.layers,
            "num_attention_heads": d.heads,
            "num_key_value_heads": d.heads,
            "intermediate_size": d.ff,
            "hidden_act": "silu",
            "attention_bias": bias,
            "convolution_bias": bias,
            "conv_kernel_size": d.kernel,
            "subsampling_factor": d.factor,
            "subsampling_conv_channels": d.channels,
            "subsampling_conv_kernel_size": 3,
            "subsampling_conv_stride": 2,
            "num_mel_bins": d.n_mel,
            "scale_input": True,
            "sliding_window": 41,
        },
    }
    if prompt:
        config |= {"num_prompts": d.prompts, "prompt_intermediate_size": d.prompt_ff, "default_prompt_id": 3}
    return config


def hf_tokenizer_json() -> dict:
    vocab = {p: i for i, (p, _) in enumerate(SPM_PIECES)}
    specials = [
        (0, "<unk>", True),
        (1, "<s>", True),
        (2, "</s>", True),
        (11, "<EOU>", False),
        (12, "<EOB>", False),
    ]
    added = [{"id": i, "content": c, "special": s, "normalized": False} for i, c, s in specials]
    added.append({"id": len(SPM_PIECES), "content": "<blank>", "special": True, "normalized": False})
    return {
        "model": {"type": "BPE", "vocab": vocab, "merges": [], "unk_token": "<unk>", "byte_fallback": True},
        "added_tokens": added,
    }


def write_hf(
    path: Path, d: Dims, prompt: bool = False, bias: bool = True, dtype: str = "F32"
) -> dict[str, np.ndarray]:
    """An HF FastConformer folder at `path`; returns its float32 state dict."""
    sd = hf_state_dict(d, prompt, bias)
    path.mkdir(parents=True, exist_ok=True)
    (path / "config.json").write_text(json.dumps(hf_config(d, prompt, bias)))
    (path / "tokenizer.json").write_text(json.dumps(hf_tokenizer_json()))
    processor = {
        "blank_token": "<blank>",
        "supported_num_lookahead_tokens": [4, 1, 0],
        "default_num_lookahead_tokens": 1,
        "feature_extractor": {
            "feature_size": d.n_mel,
            "sampling_rate": 16000,
            "hop_length": 160,
            "n_fft": 512,
            "win_length": 400,
            "preemphasis": 0.97,
            "mel_filters_dtype": "bfloat16" if prompt else "float32",
        },
    }
    if prompt:
        processor |= {
            "num_prompts": d.prompts,
            "prompt_dictionary": {"en-US": 0, "en": 0, "de": 2, "auto": 3},
        }
    (path / "processor_config.json").write_text(json.dumps(processor))
    stored = {k: ("F16", v.astype(np.float16)) if dtype == "F16" else ("F32", v) for k, v in sd.items()}
    write_safetensors(path / "model.safetensors", stored)
    return {k: v.astype(np.float16).astype(np.float32) if dtype == "F16" else v for k, v in sd.items()}


def nemo_state_dict(d: Dims, conv_norm: str = "batch_norm", seed: int = 1) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    c, e, h, j, v = d.channels, d.embd, d.pred, d.joint, len(SPM_PIECES) + 1
    sd = {
        "preprocessor.featurizer.window": rng.random(400).astype(np.float32),
        "preprocessor.featurizer.fb": rng.random((1, d.n_mel, 257)).astype(np.float32),
    }
    sd["encoder.pre_encode.out.weight"] = _rand(rng, e, c * d.freq_bins)
    sd["encoder.pre_encode.out.bias"] = _rand(rng, e)
    sd["encoder.pre_encode.conv.0.weight"], sd["encoder.pre_encode.conv.0.bias"] = (
        _rand(rng, c, 1, 3, 3),
        _rand(rng, c),
    )
    for s in range(1, int(np.log2(d.factor))):
        sd[f"encoder.pre_encode.conv.{3 * s - 1}.weight"] = _rand(rng, c, 1, 3, 3)
        sd[f"encoder.pre_encode.conv.{3 * s - 1}.bias"] = _rand(rng, c)
        sd[f"encoder.pre_encode.conv.{3 * s}.weight"] = _rand(rng, c, c, 1, 1)
        sd[f"encoder.pre_encode.conv.{3 * s}.bias"] = _rand(rng, c)
    names = {
        "q": "linear_q",
        "k": "linear_k",
        "v": "linear_v",
        "o": "linear_out",
        "pos": "linear_pos",
        "u": "pos_bias_u",
        "v_bias": "pos_bias_v",
    }
    _encoder_layers(sd, rng, d, names, bias=False)
    for i in range(d.layers):
        p = f"encoder.layers.{i}.conv.batch_norm."
        sd[p + "weight"], sd[p + "bias"] = 1 + _rand(rng, e), _rand(rng, e)
        if conv_norm == "batch_norm":
            sd[p + "running_mean"], sd[p + "running_var"] = (
                _rand(rng, e),
                0.5 + rng.random(e).astype(np.float32),
            )
            sd[p + "num_batches_tracked"] = np.array(7, dtype=np.int64)
    sd["decoder.prediction.embed.weight"] = _rand(rng, v, h)
    sd["decoder.prediction.embed.weight"][v - 1] = 0  # the blank is the padding row
    for layer in range(d.pred_layers):
        for kind in ("ih", "hh"):
            sd[f"decoder.prediction.dec_rnn.lstm.weight_{kind}_l{layer}"] = _rand(rng, 4 * h, h)
            sd[f"decoder.prediction.dec_rnn.lstm.bias_{kind}_l{layer}"] = _rand(rng, 4 * h)
    sd["joint.pred.weight"], sd["joint.pred.bias"] = _rand(rng, j, h), _rand(rng, j)
    sd["joint.enc.weight"], sd["joint.enc.bias"] = _rand(rng, j, e), _rand(rng, j)
    sd["joint.joint_net.2.weight"], sd["joint.joint_net.2.bias"] = _rand(rng, v, j), _rand(rng, v)
    return sd


def nemo_config(d: Dims, conv_norm: str = "batch_norm") -> dict:
    n = len(SPM_PIECES)
    return {
        "sample_rate": 16000,
        "target": "nemo.collections.asr.models.rnnt_bpe_models.EncDecRNNTBPEModel",
        "tokenizer": {"dir": "/x", "type": "bpe", "model_path": "nemo:0123abcd_tokenizer.model"},
        "preprocessor": {
            "_target_": "nemo.collections.asr.modules.AudioToMelSpectrogramPreprocessor",
            "sample_rate": 16000,
            "normalize": "NA",
            "window_size": 0.025,
            "window_stride": 0.01,
            "window": "hann",
            "features": d.n_mel,
            "n_fft": 512,
            "frame_splicing": 1,
            "dither": 1e-5,
            "pad_to": 0,
        },
        "encoder": {
            "_target_": "nemo.collections.asr.modules.ConformerEncoder",
            "feat_in": d.n_mel,
            "feat_out": -1,
            "n_layers": d.layers,
            "d_model": d.embd,
            "use_bias": False,
            "subsampling": "dw_striding",
            "subsampling_factor": d.factor,
            "subsampling_conv_channels": d.channels,
            "causal_downsampling": True,
            "ff_expansion_factor": d.ff // d.embd,
            "self_attention_model": "rel_pos",
            "n_heads": d.heads,
            "att_context_size": [[40, 1], [40, 4]],
            "att_context_style": "chunked_limited",
            "xscaling": False,
            "conv_kernel_size": d.kernel,
            "conv_norm_type": conv_norm,
            "conv_context_size": "causal",
        },
        "decoder": {
            "_target_": "nemo.collections.asr.modules.RNNTDecoder",
            "normalization_mode": None,
            "blank_as_pad": True,
            "vocab_size": n,
            "prednet": {"pred_hidden": d.pred, "pred_rnn_layers": d.pred_layers, "dropout": 0.2},
        },
        "joint": {
            "_target_": "nemo.collections.asr.modules.RNNTJoint",
            "num_classes": n,
            "jointnet": {
                "joint_hidden": d.joint,
                "activation": "relu",
                "dropout": 0.2,
                "encoder_hidden": d.embd,
                "pred_hidden": d.pred,
            },
        },
        "decoding": {"strategy": "greedy_batch", "greedy": {"max_symbols": 5}},
    }


def nemo_members(config: dict, sd: dict[str, np.ndarray], inject: bytes = b"") -> dict[str, bytes]:
    return {
        "model_config.yaml": yaml.safe_dump(config).encode(),
        "model_weights.ckpt": torch_zip_bytes(sd, inject),
        "0123abcd_tokenizer.model": sentencepiece_bytes(SPM_PIECES),
        "4567cdef_vocab.txt": "\n".join(p for p, _ in SPM_PIECES).encode(),
    }


def write_nemo(path: Path, members: dict[str, bytes], compressed: bool = False) -> None:
    """A .nemo tar of `members` (stored as ./name, as NeMo writes them)."""
    with tarfile.open(path, "w:gz" if compressed else "w:") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo("./" + name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
