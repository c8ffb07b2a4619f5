"""The language picker's entries for a model's language names: one per language, readable labels.

Usage::

    slots = language_slots(path)                     # {"en-US": 0, "en": 0, "de-DE": 9, "de": 9, ...}
    choices = language_choices(info.languages, slots)
    [c.label for c in choices]                       # ["Auto", "Arabic (ar-AR)", ..., "German (de-DE)", ...]
    find_choice(choices, "de").code                  # "de-DE": aliases select the same entry

A model's language dictionary names one prompt slot several ways (``de`` and ``de-DE``; ``en-GB``
and ``enGB``). Names that share a slot are one entry, shown by its first ``xx-YY`` name in the
model's order; "auto" (the model picks the language itself) is listed first as "Auto". The slots
come from the GGUF header (``fastconformer.prompt.names`` / ``.ids``, engine/GGUF.md), since the
engine's model info lists the names only; without them, names that differ only by the hyphen
(``enGB``/``en-GB``) are merged and every other name is its own entry.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from captionist.models.gguf_header import read_gguf_values

AUTO = "auto"
PROMPT_NAMES_KEY = "fastconformer.prompt.names"
PROMPT_IDS_KEY = "fastconformer.prompt.ids"

# English names of the ISO 639 codes that speech models' dictionaries use.
LANGUAGE_NAMES = {
    "af": "Afrikaans", "am": "Amharic", "ar": "Arabic", "ay": "Aymara", "az": "Azerbaijani",
    "bg": "Bulgarian", "bn": "Bengali", "cs": "Czech", "da": "Danish", "de": "German", "el": "Greek",
    "en": "English", "es": "Spanish", "et": "Estonian", "fa": "Persian", "fi": "Finnish", "fr": "French",
    "gn": "Guarani", "gu": "Gujarati", "ha": "Hausa", "haw": "Hawaiian", "he": "Hebrew", "hi": "Hindi",
    "hr": "Croatian", "hu": "Hungarian", "hy": "Armenian", "id": "Indonesian", "ig": "Igbo",
    "it": "Italian", "ja": "Japanese", "ka": "Georgian", "km": "Khmer", "kn": "Kannada", "ko": "Korean",
    "ku": "Kurdish", "ky": "Kyrgyz", "ln": "Lingala", "lt": "Lithuanian", "lv": "Latvian", "mi": "Māori",
    "ml": "Malayalam", "mr": "Marathi", "ms": "Malay", "mt": "Maltese", "nah": "Nahuatl",
    "nb": "Norwegian Bokmål", "ne": "Nepali", "nl": "Dutch", "nn": "Norwegian Nynorsk", "no": "Norwegian",
    "ny": "Chichewa", "pl": "Polish", "pt": "Portuguese", "qu": "Quechua", "ro": "Romanian",
    "ru": "Russian", "rw": "Kinyarwanda", "si": "Sinhala", "sk": "Slovak", "sl": "Slovenian",
    "sm": "Samoan", "so": "Somali", "sv": "Swedish", "sw": "Swahili", "ta": "Tamil", "te": "Telugu",
    "tg": "Tajik", "th": "Thai", "to": "Tongan", "tr": "Turkish", "uk": "Ukrainian", "ur": "Urdu",
    "uz": "Uzbek", "vi": "Vietnamese", "yo": "Yoruba", "zh": "Chinese", "zu": "Zulu",
}  # fmt: skip

_CODE = re.compile(r"^([a-z]{2,3})-?([A-Z]{2})?$")


@dataclass(frozen=True)
class LanguageChoice:
    code: str  # the name passed to Stream.set_language
    label: str  # "German (de-DE)", "Auto"
    aliases: tuple[str, ...]  # every name of the model for the same language


def _normal(name: str) -> str:
    """``enGB`` -> ``en-GB``; other names unchanged."""
    m = _CODE.match(name)
    return f"{m.group(1)}-{m.group(2)}" if m and m.group(2) else name


def label_of(code: str) -> str:
    if code == AUTO:
        return "Auto"
    m = _CODE.match(code)
    name = LANGUAGE_NAMES.get(m.group(1)) if m else None
    return f"{name} ({_normal(code)})" if name else code


def language_choices(names: Sequence[str], slots: Mapping[str, int] | None = None) -> list[LanguageChoice]:
    """One ``LanguageChoice`` per language of ``names`` (a model's ``languages``), "Auto" first,
    then by label. ``slots``: name -> prompt slot, from ``language_slots``."""
    groups: dict[object, list[str]] = {}
    for name in names:
        key = ("slot", slots[name]) if slots and name in slots else ("name", _normal(name))
        groups.setdefault(key, []).append(name)
    choices = []
    for members in groups.values():
        shown = next((n for n in members if "-" in n), members[0])
        code = AUTO if AUTO in members else shown
        choices.append(LanguageChoice(code, label_of(code), tuple(members)))
    return sorted(choices, key=lambda c: (c.code != AUTO, c.label.casefold()))


def find_choice(choices: Sequence[LanguageChoice], name: str | None) -> LanguageChoice | None:
    """The choice that ``name`` (any alias) selects, else None."""
    for choice in choices:
        if name in choice.aliases:
            return choice
    return None


def language_slots(path: Path) -> dict[str, int]:
    """Language name -> prompt slot from a FastConformer GGUF header; ``{}`` when it has none."""
    values = read_gguf_values(path, (PROMPT_NAMES_KEY, PROMPT_IDS_KEY))
    names, ids = values.get(PROMPT_NAMES_KEY), values.get(PROMPT_IDS_KEY)
    if not isinstance(names, list) or not isinstance(ids, list) or len(names) != len(ids):
        return {}
    return {str(n): int(i) for n, i in zip(names, ids, strict=True)}
