"""Plan the conversion of a Hugging Face FastConformer RNN-T folder (Nemotron ASR Streaming, Nemotron 3.5).

The folder is a ``save_pretrained`` of ``NemotronAsrStreamingForRNNT`` (``model_type``
``nemotron_asr_streaming``) or ``Nemotron3_5AsrForRNNT`` (``nemotron3_5_asr``): ``config.json`` (with
``encoder_config``), ``model.safetensors`` (or shards), ``tokenizer.json`` and the processor's
``processor_config.json`` (feature extractor nested under ``feature_extractor``) or a flat
``preprocessor_config.json``. Defaults for absent keys are those of the transformers classes.

The transformers model is always causal (subsampling and depthwise conv), uses chunked-limited attention
with left context ``sliding_window - 1`` and a LayerNorm in the conv module; lookaheads are the
processor's ``supported_num_lookahead_tokens`` with ``default_num_lookahead_tokens`` moved first.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .checkpoint import hf_shard_paths, open_safetensors, read_json
from .config_values import get_bool, get_float, get_int, get_str, int_list, section
from .errors import ConversionError
from .fastconformer_metadata import ARCH, add_fastconformer_metadata
from .fastconformer_params import LOG_GUARD, FastConformerParams, PromptParams, check_params
from .fastconformer_tensors import HF_NAMES, fastconformer_tensors, plan_fastconformer_tensors
from .frontend import hann_window_symmetric, mel_filterbank_f32, round_table
from .hf_tokenizer import read_hf_tokenizer, token_id
from .nemotron_prompts import DEFAULT_PROMPT_DICTIONARY
from .piece_vocab import check_against_joint
from .plan import ConversionPlan, OutTensor, file_type
from .tensor_store import SafetensorsStore

HF_MODEL_TYPES = ("nemotron_asr_streaming", "nemotron3_5_asr")
DEFAULT_LOOKAHEADS = [13, 6, 1, 0]  # transformers' DEFAULT_NUM_LOOKAHEAD_TOKENS
_DEFAULT_VOCAB = {"nemotron_asr_streaming": (1025, 1024), "nemotron3_5_asr": (13088, 13087)}


def plan_fastconformer_hf(src: Path, outtype: str) -> ConversionPlan:
    """Open and validate the HF folder `src`; return the plan that writes its GGUF."""
    config = read_json(src / "config.json")
    processor, features = _processor_configs(src)
    params = params_from_hf(config, processor, features)
    tokenizer_path = src / "tokenizer.json"
    if not tokenizer_path.is_file():
        raise ConversionError(f"{src} has no tokenizer.json (the vocabulary is needed in the model file)")
    vocab = read_hf_tokenizer(tokenizer_path)
    check_against_joint(vocab, params.n_vocab, params.blank_id, "tokenizer.json")
    blank_piece = processor.get("blank_token", "<blank>")
    blank = token_id(vocab, blank_piece) if isinstance(blank_piece, str) else None
    if blank is not None and blank != params.blank_id:
        raise ConversionError(
            f"tokenizer.json gives {blank_piece!r} id {blank}, "
            f"but config.json blank_token_id is {params.blank_id}"
        )

    store = SafetensorsStore(open_safetensors(hf_shard_paths(src)))
    filters = round_table(
        mel_filterbank_f32(
            params.sample_rate, params.n_fft, params.n_mel, params.mel_f_min, params.mel_f_max
        ),
        params.table_dtype,
    )
    window = round_table(hann_window_symmetric(params.win_length), params.table_dtype)
    tensors = [
        OutTensor("audio.mel_filters", filters.shape, "f32", lambda: filters),
        OutTensor("audio.window", window.shape, "f32", lambda: window),
    ]
    specs = fastconformer_tensors(params, HF_NAMES)
    tensors += plan_fastconformer_tensors(specs, store, params, outtype, ignored=set())
    return ConversionPlan(
        arch=ARCH,
        add_metadata=lambda w: add_fastconformer_metadata(w, params, vocab, file_type(outtype)),
        tensors=tensors,
    )


def _processor_configs(src: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(processor keys, feature-extractor keys) from processor_config.json and/or preprocessor_config.json."""
    processor: dict[str, Any] = {}
    features: dict[str, Any] = {}
    if (src / "preprocessor_config.json").is_file():
        flat = read_json(src / "preprocessor_config.json")
        processor.update(flat)
        features.update(flat)
    if (src / "processor_config.json").is_file():
        proc = read_json(src / "processor_config.json")
        nested = proc.get("feature_extractor")
        if nested is not None and not isinstance(nested, dict):
            raise ConversionError("processor_config.json feature_extractor is not a JSON object")
        processor.update({k: v for k, v in proc.items() if k != "feature_extractor"})
        features.update(nested or {})
    return processor, features


def params_from_hf(
    config: dict[str, Any], processor: dict[str, Any], features: dict[str, Any]
) -> FastConformerParams:
    """FastConformerParams from config.json and the processor / feature-extractor configs."""
    variant = config.get("model_type")
    if variant not in HF_MODEL_TYPES:
        raise ConversionError(f"config.json has model_type {variant!r}, not a FastConformer RNN-T model")
    w, fw, pw = "config.json", "feature extractor config", "processor config"
    enc = section(config, "encoder_config", w)
    ew = w + " encoder_config"
    for key, needed in (("hidden_act", "silu"),):
        if get_str(enc, key, ew, needed) != needed:
            raise ConversionError(f"{ew} {key} is {enc[key]!r}; the engine computes only {needed!r}")
    n_embd = get_int(enc, "hidden_size", ew, 1024)
    n_head = get_int(enc, "num_attention_heads", ew, 8)
    if get_int(enc, "num_key_value_heads", ew, n_head) != n_head:
        raise ConversionError(f"{ew} num_key_value_heads must equal num_attention_heads {n_head}")
    if n_embd % n_head == 0 and get_int(enc, "head_dim", ew, n_embd // n_head) != n_embd // n_head:
        raise ConversionError(f"{ew} head_dim must be hidden_size / num_attention_heads")
    n_mel = get_int(enc, "num_mel_bins", ew, 80)
    if get_int(features, "feature_size", fw, n_mel) != n_mel:
        raise ConversionError(f"{fw} feature_size {features['feature_size']} != {ew} num_mel_bins {n_mel}")
    sample_rate = get_int(features, "sampling_rate", fw, 16000)

    supported = int_list(
        processor.get("supported_num_lookahead_tokens", DEFAULT_LOOKAHEADS),
        f"{pw} supported_num_lookahead_tokens",
    )
    default = get_int(processor, "default_num_lookahead_tokens", pw, supported[0], minimum=0)
    if default not in supported:
        raise ConversionError(f"{pw} default_num_lookahead_tokens {default} is not one of {supported}")

    n_vocab_default, blank_default = _DEFAULT_VOCAB[variant]
    dec_n_embd = get_int(config, "decoder_hidden_size", w, 640)
    params = FastConformerParams(
        variant=variant,
        sample_rate=sample_rate,
        n_fft=get_int(features, "n_fft", fw, 512),
        win_length=get_int(features, "win_length", fw, 400),
        hop_length=get_int(features, "hop_length", fw, 160),
        n_mel=n_mel,
        preemphasis=get_float(features, "preemphasis", fw, 0.0) if "preemphasis" in features else 0.97,
        log_guard=LOG_GUARD,
        mel_f_min=0.0,
        mel_f_max=sample_rate / 2,
        table_dtype=get_str(features, "mel_filters_dtype", fw, "float32"),
        n_embd=n_embd,
        n_layer=get_int(enc, "num_hidden_layers", ew, 24),
        n_head=n_head,
        n_ff=get_int(enc, "intermediate_size", ew, 4096),
        conv_kernel=get_int(enc, "conv_kernel_size", ew, 9),
        conv_norm="layer_norm",
        xscale=n_embd**0.5 if get_bool(enc, "scale_input", ew, True) else 1.0,
        sub_factor=get_int(enc, "subsampling_factor", ew, 8),
        sub_channels=get_int(enc, "subsampling_conv_channels", ew, 256),
        sub_kernel=get_int(enc, "subsampling_conv_kernel_size", ew, 3),
        sub_stride=get_int(enc, "subsampling_conv_stride", ew, 2),
        left_context=get_int(enc, "sliding_window", ew, 71) - 1,
        lookaheads=[default] + [r for r in supported if r != default],
        attn_bias=get_bool(enc, "attention_bias", ew, True),
        conv_bias=get_bool(enc, "convolution_bias", ew, True),
        dec_n_embd=dec_n_embd,
        dec_n_layer=get_int(config, "num_decoder_layers", w, 2),
        joint_n_embd=dec_n_embd,  # transformers' joint works at the decoder width
        joint_activation=get_str(config, "hidden_act", w, "relu"),
        n_vocab=get_int(config, "vocab_size", w, n_vocab_default, minimum=2),
        blank_id=get_int(config, "blank_token_id", w, blank_default, minimum=0),
        max_symbols_per_step=get_int(config, "max_symbols_per_step", w, 10),
        prompt=_prompt(config, processor) if variant == "nemotron3_5_asr" else None,
    )
    check_params(params, w)
    return params


def _prompt(config: dict[str, Any], processor: dict[str, Any]) -> PromptParams:
    n_prompts = get_int(config, "num_prompts", "config.json", 128)
    if get_int(processor, "num_prompts", "processor config", n_prompts) != n_prompts:
        raise ConversionError(
            f"processor config num_prompts differs from config.json num_prompts {n_prompts}"
        )
    table = processor.get("prompt_dictionary")
    table = DEFAULT_PROMPT_DICTIONARY if table is None else table
    if not isinstance(table, dict) or not all(isinstance(k, str) for k in table):
        raise ConversionError("processor config prompt_dictionary is not an object of language -> slot")
    ids = [get_int(table, name, "processor config prompt_dictionary", minimum=0) for name in table]
    return PromptParams(
        n_prompts=n_prompts,
        n_ff=get_int(config, "prompt_intermediate_size", "config.json", 2048),
        default_id=get_int(config, "default_prompt_id", "config.json", 101, minimum=0),
        names=list(table),
        ids=ids,
    )
