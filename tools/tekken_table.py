"""Synthetic tekken.json files with the real Voxtral Realtime control tokens (torch-free).

Shared by the reference fixtures (tools/reference_common.py) and the demo model's vocabulary
(tools/demo_vocab.py): the same control-token table, pre-tokenizer pattern and audio section,
only the normal vocabulary differs.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

N_SPECIAL = 1000
SAMPLE_RATE = 16000

# Control tokens of the real Voxtral Realtime tekken file, by rank; names are mistral-common's
# `SpecialTokens` values where it defines one. Ranks 38..999 are `<SPECIAL_n>` fillers.
SPECIAL_TOKENS: tuple[str, ...] = (
    "<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]",
    "[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[TOOL_CALLS]", "[IMG]", "<pad>", "[IMG_BREAK]",
    "[IMG_END]", "[PREFIX]", "[MIDDLE]", "[SUFFIX]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]",
    "[TOOL_CONTENT]", "[BBOX]", "[/BBOX]", "[STEP]", "[/STEP]", "[AUDIO]", "[BEGIN_AUDIO]",
    "[OUTPUT_AUDIO]", "[REF]", "[/REF]", "[REASONING]", "[VERIFICATION]", "[SCORE]",
    "[STREAMING_PAD]", "[STREAMING_WORD]", "[REPEAT_AUDIO_TEXT]",
    # Not at these ranks in the real file: mistral-common's v13 instruct tokenizer requires them.
    "[ARGS]", "[CALL_ID]", "[TRANSCRIBE]",
)  # fmt: skip

TEKKEN_PATTERN = (
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|"
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|"
    r"\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)


def special_names() -> list[str]:
    """All N_SPECIAL control-token names in rank order."""
    return list(SPECIAL_TOKENS) + [f"<SPECIAL_{i}>" for i in range(len(SPECIAL_TOKENS), N_SPECIAL)]


def token_str(piece: bytes) -> str | None:
    """A piece's text, or None when it is not valid UTF-8 on its own (as tekken files store it)."""
    try:
        return piece.decode("utf-8")
    except UnicodeDecodeError:
        return None


def tekken_json(pieces: list[bytes], transcription_delay_ms: int) -> dict:
    """tekken.json content: the control tokens, `pieces` as the normal vocabulary in rank order,
    and the real model's streaming audio settings with the given default delay."""
    return {
        "config": {
            "pattern": TEKKEN_PATTERN,
            "num_vocab_tokens": len(pieces),
            "default_vocab_size": N_SPECIAL + len(pieces),
            "default_num_special_tokens": N_SPECIAL,
            "version": "v13",
        },
        "vocab": [
            {"rank": i, "token_bytes": base64.b64encode(p).decode("ascii"), "token_str": token_str(p)}
            for i, p in enumerate(pieces)
        ],
        "special_tokens": [
            {"rank": i, "token_str": s, "is_control": True} for i, s in enumerate(special_names())
        ],
        "audio": {
            "sampling_rate": SAMPLE_RATE,
            "frame_rate": 12.5,
            "audio_encoding_config": {"num_mel_bins": 128, "hop_length": 160, "window_size": 400},
            "chunk_length_s": None,
            "transcription_format": "streaming",
            "transcription_delay_ms": transcription_delay_ms,
            "streaming_look_ahead_ms": 2.5,
            "streaming_look_back_ms": 52.5,
            "streaming_n_left_pad_tokens": 32,
        },
    }


def write_json(path: Path, data: dict) -> dict:
    """Write `data` as a tekken.json at `path` (parents created) and return it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return data
