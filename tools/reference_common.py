"""Building blocks for `make_reference_fixtures.py` (dev-only; needs espeak-ng, regex, soxr).

Three concepts live here because each is small and all three are fixture inputs rather than
reference outputs:

* test clips (espeak-ng speech plus faint noise, digital silence, white noise), 16 kHz PCM_16;
* a synthetic tekken tokenizer file with the real control-token ids and a tiny byte-level BPE;
* the Mistral-original checkpoint layout (`params.json` / `consolidated.safetensors`) as the
  inverse of the HF conversion, plus that conversion's forward direction for a round-trip check.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np
import soundfile as sf
import soxr
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script or imported as tools.*
from tools.tekken_table import N_SPECIAL as N_SPECIAL  # noqa: E402  (re-exported for make_reference_fixtures)
from tools.tekken_table import TEKKEN_PATTERN, tekken_json, token_str, write_json  # noqa: E402

SAMPLE_RATE = 16000
N_NORMAL = 536  # 256 single bytes + 280 merges -> vocab 1536
NOISE_SEED = 1234

SPEECH_SHORT = "The quick brown fox jumps over the lazy dog."
SPEECH_MID = "Captions appear on the screen while people are talking, quietly and without delay."
SPEECH_LONG = (
    "Live captioning turns speech into text as it happens. The model listens to short slices of "
    "audio, and every eighty milliseconds it decides whether a new word has started. When the "
    "speaker pauses, nothing is written, and when the speaker continues, the text grows again."
)
# Extra text for the BPE corpus: accents, typographic punctuation, CJK and emoji so that
# multi-byte UTF-8 pieces (whole characters and partial prefixes) become tokens.
CORPUS_EXTRA = (
    "café naïve résumé déjà vu über Straße Grüße señor año coöperate façade — “quoted” ‘single’ "
    "… 10 € 5 £ 日本語のテキスト 中文字幕 😀 🎤 🎧 — é è ê ü ö ä ß ñ ç “ ” ‘ ’ … € 字幕 "
)


# ---------------------------------------------------------------- clips


def _espeak(text: str, voice: str, speed: int) -> np.ndarray:
    """Synthesize `text` with espeak-ng and return float32 mono samples at 16 kHz."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "speech.wav"
        subprocess.run(["espeak-ng", "-v", voice, "-s", str(speed), "-w", str(out), text], check=True)
        audio, rate = sf.read(out, dtype="float32")
    if audio.ndim > 1:
        audio = audio.mean(axis=1)
    return soxr.resample(audio, rate, SAMPLE_RATE).astype(np.float32)


def _fit(audio: np.ndarray, n: int) -> np.ndarray:
    """Trim or zero-pad to exactly n samples."""
    return audio[:n] if audio.size >= n else np.pad(audio, (0, n - audio.size))


def make_clips(out_dir: Path) -> dict[str, np.ndarray]:
    """Write the five test clips and return them as read back (PCM_16-quantized float32)."""
    rng = np.random.default_rng(NOISE_SEED)
    out_dir.mkdir(parents=True, exist_ok=True)
    # Lengths are deliberately not multiples of 1280 samples (one 80 ms token).
    specs = {
        "speech_short.wav": (SPEECH_SHORT, "en-us", 170, 48_800),  # 3.05 s
        "speech_mid.wav": (SPEECH_MID, "en-gb+f3", 160, 97_600),  # 6.10 s
        "speech_long.wav": (SPEECH_LONG, "en-us+m3", 150, 272_320),  # 17.02 s
    }
    clips: dict[str, np.ndarray] = {}
    for name, (text, voice, speed, n) in specs.items():
        speech = _fit(_espeak(text, voice, speed), n)
        speech = 0.5 * speech / max(float(np.abs(speech).max()), 1e-6)
        # Faint noise (-60 dBFS) so no stretch of a speech clip is digital silence.
        clips[name] = speech + 1e-3 * rng.standard_normal(n).astype(np.float32)
    clips["silence.wav"] = np.zeros(32_000, dtype=np.float32)
    clips["noise.wav"] = (3e-3 * rng.standard_normal(32_000)).astype(np.float32)
    read_back: dict[str, np.ndarray] = {}
    for name, audio in clips.items():
        sf.write(out_dir / name, np.clip(audio, -1.0, 1.0), SAMPLE_RATE, subtype="PCM_16")
        read_back[name], _ = sf.read(out_dir / name, dtype="float32")
    return read_back


# ---------------------------------------------------------------- tekken


def _train_bpe(corpus: str, n_merges: int) -> list[bytes]:
    """Tiny deterministic byte-level BPE over tekken's pre-tokenizer splits; returns merged tokens."""
    import regex

    words = Counter(m.encode("utf-8") for m in regex.findall(TEKKEN_PATTERN, corpus))
    seqs = {w: [bytes([b]) for b in w] for w in words}
    merges: list[bytes] = []
    while len(merges) < n_merges:
        pairs: Counter[tuple[bytes, bytes]] = Counter()
        for w, seq in seqs.items():
            for a, b in zip(seq, seq[1:], strict=False):
                pairs[(a, b)] += words[w]
        if not pairs:
            raise RuntimeError(f"BPE corpus too small: only {len(merges)} merges")
        (a, b), _ = max(pairs.items(), key=lambda kv: (kv[1], kv[0]))
        merged = a + b
        merges.append(merged)
        for w, seq in seqs.items():
            out, i = [], 0
            while i < len(seq):
                if i + 1 < len(seq) and seq[i] == a and seq[i + 1] == b:
                    out.append(merged)
                    i += 2
                else:
                    out.append(seq[i])
                    i += 1
            seqs[w] = out
    return merges


def make_tekken(path: Path, transcription_delay_ms: int = 480) -> dict:
    """Write a synthetic tekken.json (1000 control tokens + 536 byte-level tokens) and return it."""
    corpus = " ".join([SPEECH_SHORT, SPEECH_MID, SPEECH_LONG] * 3 + [CORPUS_EXTRA] * 4)
    pieces = [bytes([i]) for i in range(256)] + _train_bpe(corpus, N_NORMAL - 256)
    if not any(len(p) > 1 and token_str(p) is None for p in pieces):
        raise RuntimeError("BPE produced no partial multi-byte UTF-8 piece")
    return write_json(path, tekken_json(pieces, transcription_delay_ms))


# ---------------------------------------------------------------- Mistral layout

_ENC = "mm_streams_embeddings.embedding_module.whisper_encoder."
_MM = "mm_streams_embeddings.embedding_module."
# (Mistral-original name pattern, HF save_pretrained name); `{i}` is a layer index.
NAME_PAIRS: list[tuple[str, str]] = [
    ("norm.weight", "language_model.model.norm.weight"),
    (_MM + "tok_embeddings.weight", "language_model.model.embed_tokens.weight"),
    ("layers.{i}.attention_norm.weight", "language_model.model.layers.{i}.input_layernorm.weight"),
    ("layers.{i}.ffn_norm.weight", "language_model.model.layers.{i}.post_attention_layernorm.weight"),
    ("layers.{i}.attention.wq.weight", "language_model.model.layers.{i}.self_attn.q_proj.weight"),
    ("layers.{i}.attention.wk.weight", "language_model.model.layers.{i}.self_attn.k_proj.weight"),
    ("layers.{i}.attention.wv.weight", "language_model.model.layers.{i}.self_attn.v_proj.weight"),
    ("layers.{i}.attention.wo.weight", "language_model.model.layers.{i}.self_attn.o_proj.weight"),
    ("layers.{i}.feed_forward.w1.weight", "language_model.model.layers.{i}.mlp.gate_proj.weight"),
    ("layers.{i}.feed_forward.w2.weight", "language_model.model.layers.{i}.mlp.down_proj.weight"),
    ("layers.{i}.feed_forward.w3.weight", "language_model.model.layers.{i}.mlp.up_proj.weight"),
    (
        "layers.{i}.ada_rms_norm_t_cond.0.weight",
        "language_model.model.layers.{i}.ada_rms_norm.linear1.weight",
    ),
    (
        "layers.{i}.ada_rms_norm_t_cond.2.weight",
        "language_model.model.layers.{i}.ada_rms_norm.linear2.weight",
    ),
    (_ENC + "conv_layers.0.conv.weight", "audio_tower.embedder.conv1.weight"),
    (_ENC + "conv_layers.0.conv.bias", "audio_tower.embedder.conv1.bias"),
    (_ENC + "conv_layers.1.conv.weight", "audio_tower.embedder.conv2.weight"),
    (_ENC + "conv_layers.1.conv.bias", "audio_tower.embedder.conv2.bias"),
    (_ENC + "transformer.norm.weight", "audio_tower.norm.weight"),
    (
        _ENC + "transformer.layers.{i}.attention_norm.weight",
        "audio_tower.layers.{i}.self_attn_layer_norm.weight",
    ),
    (_ENC + "transformer.layers.{i}.attention.wq.weight", "audio_tower.layers.{i}.self_attn.q_proj.weight"),
    (_ENC + "transformer.layers.{i}.attention.wq.bias", "audio_tower.layers.{i}.self_attn.q_proj.bias"),
    (_ENC + "transformer.layers.{i}.attention.wk.weight", "audio_tower.layers.{i}.self_attn.k_proj.weight"),
    (_ENC + "transformer.layers.{i}.attention.wv.weight", "audio_tower.layers.{i}.self_attn.v_proj.weight"),
    (_ENC + "transformer.layers.{i}.attention.wv.bias", "audio_tower.layers.{i}.self_attn.v_proj.bias"),
    (_ENC + "transformer.layers.{i}.attention.wo.weight", "audio_tower.layers.{i}.self_attn.o_proj.weight"),
    (_ENC + "transformer.layers.{i}.attention.wo.bias", "audio_tower.layers.{i}.self_attn.o_proj.bias"),
    (_ENC + "transformer.layers.{i}.ffn_norm.weight", "audio_tower.layers.{i}.final_layer_norm.weight"),
    (_ENC + "transformer.layers.{i}.feed_forward.w1.weight", "audio_tower.layers.{i}.mlp.gate_proj.weight"),
    (_ENC + "transformer.layers.{i}.feed_forward.w2.weight", "audio_tower.layers.{i}.mlp.down_proj.weight"),
    (_ENC + "transformer.layers.{i}.feed_forward.w2.bias", "audio_tower.layers.{i}.mlp.down_proj.bias"),
    (_ENC + "transformer.layers.{i}.feed_forward.w3.weight", "audio_tower.layers.{i}.mlp.up_proj.weight"),
    (_MM + "audio_language_projection.0.weight", "multi_modal_projector.linear_1.weight"),
    (_MM + "audio_language_projection.2.weight", "multi_modal_projector.linear_2.weight"),
]


def _rename(name: str, src: int) -> str:
    """Map one name across layouts (src=0: Mistral -> HF, src=1: HF -> Mistral)."""
    for pair in NAME_PAIRS:
        pat = re.escape(pair[src]).replace(r"\{i\}", r"(\d+)")
        m = re.fullmatch(pat, name)
        if m:
            return pair[1 - src].replace("{i}", m.group(1)) if m.groups() else pair[1 - src]
    raise KeyError(f"no layout mapping for tensor {name!r}")


def _rope_rows(t: torch.Tensor, n_heads: int, to_neox: bool) -> torch.Tensor:
    """Reorder Q/K output rows per head: interleaved pairs (x0,x1),(x2,x3).. <-> NeoX halves."""
    rows = t.shape[0]
    half = rows // n_heads // 2
    rest = t.shape[1:]
    shape = (n_heads, half, 2, *rest) if to_neox else (n_heads, 2, half, *rest)
    return t.reshape(shape).transpose(1, 2).reshape(rows, *rest).contiguous()


def _rope_heads(hf_name: str, cfg: dict) -> int | None:
    """Number of heads whose rows a Q/K tensor holds, or None when the tensor is not Q/K."""
    if ".q_proj." in hf_name:
        key = "audio_config" if hf_name.startswith("audio_tower") else "text_config"
        return int(cfg[key]["num_attention_heads"])
    if ".k_proj." in hf_name:
        if hf_name.startswith("audio_tower"):
            return int(cfg["audio_config"]["num_attention_heads"])
        return int(cfg["text_config"]["num_key_value_heads"])
    return None


def hf_to_mistral(state: dict[str, torch.Tensor], cfg: dict) -> dict[str, torch.Tensor]:
    """Inverse of the HF conversion: original names, Q/K rows in the interleaved RoPE layout."""
    out: dict[str, torch.Tensor] = {}
    for name, t in state.items():
        name = name.removeprefix("model.")
        if name == "lm_head.weight":
            continue  # tied to the token embedding; the original file has no output matrix
        heads = _rope_heads(name, cfg)
        out[_rename(name, 1)] = _rope_rows(t, heads, to_neox=False) if heads else t.contiguous()
    return out


def mistral_to_hf(state: dict[str, torch.Tensor], cfg: dict) -> dict[str, torch.Tensor]:
    """The HF conversion's forward direction (names, then the interleaved -> NeoX row permutation)."""
    out: dict[str, torch.Tensor] = {}
    for name, t in state.items():
        hf = _rename(name, 0)
        heads = _rope_heads(hf, cfg)
        out[hf] = _rope_rows(t, heads, to_neox=True) if heads else t
    return out


def mistral_params(cfg: dict) -> dict:
    """params.json in the original release's key layout for an HF config dict."""
    text, audio = cfg["text_config"], cfg["audio_config"]
    return {
        "dim": text["hidden_size"],
        "n_layers": text["num_hidden_layers"],
        "head_dim": text["head_dim"],
        "hidden_dim": text["intermediate_size"],
        "n_heads": text["num_attention_heads"],
        "n_kv_heads": text["num_key_value_heads"],
        "use_biases": False,
        "causal": True,
        "rope_theta": text["rope_parameters"]["rope_theta"],
        "norm_eps": text["rms_norm_eps"],
        "vocab_size": text["vocab_size"],
        "model_parallel": 1,
        "tied_embeddings": True,
        "sliding_window": text["sliding_window"],
        "max_seq_len": text["max_position_embeddings"],
        "ada_rms_norm_t_cond": True,
        "ada_rms_norm_t_cond_dim": 32,
        "multimodal": {
            "whisper_model_args": {
                "encoder_args": {
                    "audio_encoding_args": {
                        "sampling_rate": SAMPLE_RATE,
                        "frame_rate": 12.5,
                        "num_mel_bins": audio["num_mel_bins"],
                        "hop_length": 160,
                        "window_size": 400,
                        "chunk_length_s": None,
                        "global_log_mel_max": 1.5,
                        "transcription_format": "streaming",
                    },
                    "dim": audio["hidden_size"],
                    "n_layers": audio["num_hidden_layers"],
                    "head_dim": audio["head_dim"],
                    "hidden_dim": audio["intermediate_size"],
                    "n_heads": audio["num_attention_heads"],
                    "n_kv_heads": audio["num_attention_heads"],
                    "use_biases": True,
                    "rope_theta": audio["rope_parameters"]["rope_theta"],
                    "causal": True,
                    "norm_eps": audio["rms_norm_eps"],
                    "pos_embed": "rope",
                    "ffn_type": "swiglu",
                    "norm_type": "rms_norm",
                    "sliding_window": audio["sliding_window"],
                    "vocab_size": text["vocab_size"],
                },
                "downsample_args": {"downsample_factor": cfg["downsample_factor"]},
            },
        },
    }
