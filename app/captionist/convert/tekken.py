"""The tekken tokenizer file (``tekken.json``) reduced to what the engine needs.

Ids below ``n_special`` are control tokens (their ``token_str`` bytes are stored; ranks the file
does not list get mistral-common's ``<SPECIAL_{id}>`` filler); id ``n_special + r`` is the normal
vocabulary entry of rank ``r`` (its base64 ``token_bytes``). The table is cut at the model's vocab size.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .checkpoint import read_json
from .errors import ConversionError

_FILLER_TEMPLATE = "<SPECIAL_{id}>"  # mistral-common Tekkenizer.SPECIAL_TOKEN_TEMPLATE
_REQUIRED_SPECIALS = {
    "bos": "<s>",
    "eos": "</s>",
    "streaming_pad": "[STREAMING_PAD]",
    "streaming_word": "[STREAMING_WORD]",
}


@dataclass(frozen=True)
class TekkenVocab:
    """Token table plus the streaming settings tekken.json carries in its ``audio`` section."""

    n_special: int
    token_bytes: bytes  # every token's bytes, concatenated in id order
    token_offsets: list[int]  # n_vocab + 1 offsets into token_bytes
    bos_id: int
    eos_id: int
    streaming_pad_id: int
    streaming_word_id: int
    transcription_delay_ms: float | None  # audio.transcription_delay_ms
    frame_rate: float | None  # audio.frame_rate (audio tokens per second)
    n_left_pad_tokens: int | None  # audio.streaming_n_left_pad_tokens

    @property
    def n_vocab(self) -> int:
        return len(self.token_offsets) - 1


def read_tekken(path: Path, n_vocab: int) -> TekkenVocab:
    """Read tekken.json and build the first `n_vocab` tokens (the model's vocabulary size)."""
    data = read_json(path)
    config = data.get("config")
    vocab = data.get("vocab")
    if not isinstance(config, dict) or not isinstance(vocab, list):
        raise ConversionError("tekken.json has no 'config' object or 'vocab' list")
    try:
        n_special = int(config.get("default_num_special_tokens", 1000))
    except (TypeError, ValueError):
        raise ConversionError("tekken.json config.default_num_special_tokens is not an integer") from None

    specials = _special_strings(data.get("special_tokens"), n_special)
    ids = {s: i for i, s in enumerate(specials)}
    missing = [s for s in _REQUIRED_SPECIALS.values() if s not in ids]
    if missing:
        raise ConversionError(f"tekken.json lacks the special token(s) {', '.join(missing)}")

    n_normal = n_vocab - n_special
    if n_normal < 0 or n_normal > len(vocab):
        raise ConversionError(
            f"tekken.json has {n_special} special + {len(vocab)} normal tokens, "
            f"which cannot make the model's vocabulary of {n_vocab}"
        )
    pieces = [s.encode("utf-8") for s in specials] + _normal_pieces(vocab, n_normal)

    offsets = [0]
    for p in pieces:
        offsets.append(offsets[-1] + len(p))
    audio = data.get("audio") if isinstance(data.get("audio"), dict) else {}
    return TekkenVocab(
        n_special=n_special,
        token_bytes=b"".join(pieces),
        token_offsets=offsets,
        bos_id=ids["<s>"],
        eos_id=ids["</s>"],
        streaming_pad_id=ids["[STREAMING_PAD]"],
        streaming_word_id=ids["[STREAMING_WORD]"],
        transcription_delay_ms=_opt_number(audio, "transcription_delay_ms"),
        frame_rate=_opt_number(audio, "frame_rate"),
        n_left_pad_tokens=_opt_int(audio, "streaming_n_left_pad_tokens"),
    )


def _special_strings(listed: Any, n_special: int) -> list[str]:
    if listed is None:
        listed = []
    if not isinstance(listed, list):
        raise ConversionError("tekken.json special_tokens is not a list")
    strings: list[str | None] = [None] * n_special
    for tok in listed:
        try:
            rank, text = int(tok["rank"]), str(tok["token_str"])
        except (TypeError, KeyError, ValueError):
            raise ConversionError("tekken.json has a special token without rank/token_str") from None
        if not 0 <= rank < n_special or strings[rank] is not None:
            raise ConversionError(f"tekken.json special token {text!r} has a bad or duplicate rank {rank}")
        strings[rank] = text
    return [s if s is not None else _FILLER_TEMPLATE.format(id=i) for i, s in enumerate(strings)]


def _normal_pieces(vocab: list[Any], n_normal: int) -> list[bytes]:
    by_rank: list[bytes | None] = [None] * n_normal
    for tok in vocab:
        try:
            rank = int(tok["rank"])
            if rank >= n_normal:
                continue
            by_rank[rank] = base64.b64decode(tok["token_bytes"], validate=True)
        except (TypeError, KeyError, ValueError, binascii.Error):
            raise ConversionError("tekken.json has a vocab entry without a valid rank/token_bytes") from None
    if any(p is None for p in by_rank):
        first = next(i for i, p in enumerate(by_rank) if p is None)
        raise ConversionError(f"tekken.json vocab has no token of rank {first}")
    return by_rank  # type: ignore[return-value]


def _opt_number(d: dict[str, Any], key: str) -> float | None:
    value = d.get(key)
    if value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ConversionError(f"tekken.json audio.{key} is {value!r}, expected a number") from None


def _opt_int(d: dict[str, Any], key: str) -> int | None:
    value = _opt_number(d, key)
    if value is None:
        return None
    if value != int(value) or value < 0:
        raise ConversionError(f"tekken.json audio.{key} is {value!r}, expected a whole number")
    return int(value)
