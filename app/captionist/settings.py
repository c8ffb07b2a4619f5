"""User settings: one JSON file in the platformdirs config dir.

Usage::

    from captionist.settings import load_settings, save_settings
    result = load_settings()            # LoadResult(settings, notice)
    s = result.settings
    s.remember_latency(info, 560)       # per model (info: captionist.models.info.ModelInfo)
    s.latency_for(info), s.language_for(info)
    save_settings(s)

Upgrades: unknown keys in the file are kept untouched (so a newer version's settings survive a
downgrade) and missing keys take their defaults. A file that is not valid JSON, or holds values of
the wrong type, falls back to defaults for what is unusable; ``LoadResult.notice`` says what
happened, and a corrupt file is kept next to the original as ``settings.json.corrupt``.

Latency and language are remembered per model, keyed by the model's file name (a model offers
its own choices). Files from before that hold one ``delay_ms`` (Voxtral's delay, then the only
model family); it still loads and is used for Voxtral models that have no latency of their own.
A stored choice the model does not offer (an edited or hostile file) falls back to the model's
default; nothing in the file can stop the app from starting.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from captionist import paths

if TYPE_CHECKING:
    from captionist.models.info import ModelInfo

SCHEMA_VERSION = 1
LEGACY_DELAY_ARCHITECTURE = "voxtral_realtime"  # the model family that the old ``delay_ms`` was for


@dataclass
class OverlaySettings:
    lines: int = 2
    font_family: str = "Sans Serif"
    font_size: int = 28
    text_color: str = "#ffffff"
    newest_color: str = "#ffe66d"
    background_color: str = "#000000"
    background_opacity: float = 0.6
    outline: bool = True
    shadow: bool = False
    position: str = "bottom"  # top | bottom | centre | custom
    click_through: bool = False
    visible: bool = True
    geometry: dict[str, list[int]] = field(default_factory=dict)  # screen name -> [x, y, w, h]


@dataclass
class Settings:
    schema: int = SCHEMA_VERSION
    sources: list[str] = field(default_factory=list)  # device ids ("pa:3", "pulse:null.monitor")
    model_path: str = ""
    backend: str = "auto"
    delay_ms: int = 0  # before per-model latencies: Voxtral's delay (0: none); kept for old files
    latency_ms: dict[str, int] = field(default_factory=dict)  # model file name -> latency
    language: dict[str, str] = field(default_factory=dict)  # model file name -> language ("": default)
    transcript_dir: str = ""
    transcript_format: str = "txt"
    transcript_timestamps: bool = True
    silence_warning_s: float = 10.0
    overlay: OverlaySettings = field(default_factory=OverlaySettings)
    first_run_done: bool = False
    extra: dict[str, Any] = field(default_factory=dict)  # keys this version does not know

    def transcript_folder(self) -> Path:
        return Path(self.transcript_dir) if self.transcript_dir else paths.default_transcript_dir()

    def latency_for(self, info: ModelInfo) -> int:
        """The latency remembered for this model if it offers it, else the old ``delay_ms`` for a
        Voxtral model, else the model's default."""
        saved = self.latency_ms.get(info.path.name)
        if saved in info.latencies_ms:
            return int(saved)
        if info.architecture == LEGACY_DELAY_ARCHITECTURE and self.delay_ms in info.latencies_ms:
            return self.delay_ms
        return info.default_latency_ms

    def remember_latency(self, info: ModelInfo, latency_ms: int) -> None:
        self.latency_ms[info.path.name] = int(latency_ms)
        if info.architecture == LEGACY_DELAY_ARCHITECTURE:
            self.delay_ms = int(latency_ms)  # what an older version reads

    def language_for(self, info: ModelInfo) -> str | None:
        """The language remembered for this model if it offers it, else its default (None for a
        model that recognises the language itself)."""
        return info.pick_language(self.language.get(info.path.name) or None)

    def remember_language(self, info: ModelInfo, language: str | None) -> None:
        self.language[info.path.name] = language or ""


@dataclass
class LoadResult:
    settings: Settings
    notice: str | None = None


# Mapping settings: the type of their values (keys are always strings).
_MAP_VALUES: dict[str, type] = {"latency_ms": int, "language": str, "geometry": list}


def _clean_map(name: str, value: dict[Any, Any]) -> tuple[dict[str, Any], bool]:
    """The entries of ``value`` with a string key and a value of the setting's type; False if any
    entry had to be dropped."""
    kind = _MAP_VALUES[name]
    kept = {
        k: v
        for k, v in value.items()
        if isinstance(k, str) and isinstance(v, kind) and not (kind is int and isinstance(v, bool))
    }
    if name == "geometry":  # [x, y, w, h] within what a window system takes
        kept = {
            k: v
            for k, v in kept.items()
            if len(v) == 4 and all(type(x) is int and abs(x) < 1 << 24 for x in v)
        }
    return kept, len(kept) == len(value)


def _merge(cls: type, data: dict[str, Any], problems: list[str], prefix: str = "") -> Any:
    """Build ``cls`` from ``data``: defaults for missing or mistyped keys."""
    default = cls()
    kwargs: dict[str, Any] = {}
    known = {f.name for f in fields(cls)}
    for f in fields(cls):
        if f.name == "extra" or f.name not in data:
            continue
        value, default_value = data[f.name], getattr(default, f.name)
        if f.name == "overlay" and isinstance(value, dict):
            kwargs[f.name] = _merge(OverlaySettings, value, problems, prefix="overlay.")
        elif isinstance(default_value, bool) != isinstance(value, bool):
            problems.append(prefix + f.name)
        elif type(default_value) is int and type(value) is int and abs(value) >= 1 << 31:
            problems.append(prefix + f.name)  # Qt takes C ints: a larger one would raise at startup
        elif isinstance(default_value, float) and isinstance(value, int):
            kwargs[f.name] = float(value)
        elif isinstance(default_value, dict) and isinstance(value, dict) and f.name in _MAP_VALUES:
            kwargs[f.name], clean = _clean_map(f.name, value)
            if not clean:
                problems.append(prefix + f.name)
        elif isinstance(value, type(default_value)):
            kwargs[f.name] = value
        else:
            problems.append(prefix + f.name)
    obj = cls(**kwargs)
    if cls is Settings:
        obj.extra = {k: v for k, v in data.items() if k not in known}
    return obj


def load_settings(path: Path | None = None) -> LoadResult:
    """Read settings; never raises for a bad file (see module docstring)."""
    path = path or paths.settings_file()
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return LoadResult(Settings())
    except OSError as exc:
        return LoadResult(Settings(), f"could not read settings ({exc}); using defaults")
    try:
        data = json.loads(raw)
        if not isinstance(data, dict):
            raise ValueError("top level is not an object")
    except ValueError as exc:
        backup = path.with_name(path.name + ".corrupt")
        try:
            os.replace(path, backup)
        except OSError:
            backup = path
        return LoadResult(
            Settings(), f"settings file was corrupt ({exc}); using defaults, old file kept as {backup}"
        )
    problems: list[str] = []
    settings = _merge(Settings, data, problems)
    notice = f"ignored invalid settings: {', '.join(problems)}" if problems else None
    return LoadResult(settings, notice)


def save_settings(settings: Settings, path: Path | None = None) -> Path:
    """Write atomically (temp file + rename) so a crash never leaves half a file."""
    path = path or paths.settings_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    data = asdict(settings)
    extra = data.pop("extra", {})
    data = {**extra, **data}
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)
    return path
