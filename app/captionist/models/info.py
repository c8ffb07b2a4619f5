"""``ModelInfo``: what the app needs to know about a loaded model, as a plain value for signals.

Usage::

    info = ModelInfo.of(engine_model, path)   # any object with the captionist.engine.Model API
    info.latencies_ms, info.default_latency_ms, info.languages, info.token_ms
    info.label                                # "Nemotron ASR Streaming (…) · FastConformer"
    family_name("fastconformer_rnnt")         # "FastConformer"

Everything comes from the model's own info (STYLE rule 11): no latency, language or token
duration is assumed here. ``language_slots`` (which names are aliases of one language) comes from
the file's GGUF header, since the engine's info lists only the names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from captionist.models.languages import LanguageChoice, language_choices, language_slots

FAMILY_NAMES = {"voxtral_realtime": "Voxtral", "fastconformer_rnnt": "FastConformer"}


def family_name(architecture: str | None) -> str | None:
    """The display name of a model family (``general.architecture``), None when unknown."""
    return FAMILY_NAMES.get(architecture or "")


@dataclass(frozen=True)
class ModelInfo:
    path: Path
    name: str  # the file's own description (``general.name``)
    architecture: str
    variant: str
    latencies_ms: tuple[int, ...]  # ascending
    default_latency_ms: int
    languages: tuple[str, ...]  # empty: the model recognises the language itself
    default_language: str | None
    punctuation: bool
    end_of_utterance: bool
    token_ms: int
    eou_id: int  # the vocabulary id of the end-of-utterance token, -1 when it is not a token
    backend: str
    language_slots: dict[str, int] = field(default_factory=dict, compare=False)  # name -> prompt slot

    @property
    def family(self) -> str:
        return family_name(self.architecture) or self.architecture

    @property
    def label(self) -> str:
        return f"{self.name} · {self.family}"

    @classmethod
    def of(cls, model: Any, path: Path | None = None) -> ModelInfo:
        """The info of a loaded ``model``; ``path``: the file it was loaded from (default: its own)."""
        info: dict[str, Any] = dict(getattr(model, "info", {}) or {})
        path = Path(path) if path is not None else Path(getattr(model, "path", info.get("path", "")))
        return cls(
            path=path,
            name=str(info.get("name", "")),
            architecture=str(model.architecture),
            variant=str(info.get("variant", "")),
            latencies_ms=tuple(int(x) for x in model.latencies_ms),
            default_latency_ms=int(model.default_latency_ms),
            languages=tuple(str(x) for x in model.languages),
            default_language=model.default_language or None,
            punctuation=bool(model.punctuation),
            end_of_utterance=bool(info.get("end_of_utterance", False)),
            token_ms=int(model.token_ms),
            eou_id=int(info.get("eou_id", -1)),
            backend=str(info.get("backend", "?")),
            language_slots=language_slots(path) if model.languages else {},
        )

    @property
    def language_choices(self) -> list[LanguageChoice]:
        """The language picker's entries (empty for a model that recognises the language itself)."""
        return language_choices(self.languages, self.language_slots)

    def pick_latency(self, wanted: int | None) -> int:
        """``wanted`` when the model offers it, else the model's default."""
        return wanted if wanted in self.latencies_ms else self.default_latency_ms

    def pick_language(self, wanted: str | None) -> str | None:
        """``wanted`` when the model offers it, else its default (None for models without a choice)."""
        if not self.languages:
            return None
        return wanted if wanted in self.languages else self.default_language
