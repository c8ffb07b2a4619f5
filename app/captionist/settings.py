"""User settings: one JSON file in the platformdirs config dir.

Usage::

    from captionist.settings import load_settings, save_settings
    result = load_settings()            # LoadResult(settings, notice)
    s = result.settings
    s.delay_ms = 480
    save_settings(s)

Upgrades: unknown keys in the file are kept untouched (so a newer version's settings survive a
downgrade) and missing keys take their defaults. A file that is not valid JSON, or holds values of
the wrong type, falls back to defaults for what is unusable; ``LoadResult.notice`` says what
happened, and a corrupt file is kept next to the original as ``settings.json.corrupt``.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from captionist import paths

SCHEMA_VERSION = 1


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
    delay_ms: int = 480
    transcript_dir: str = ""
    transcript_format: str = "txt"
    transcript_timestamps: bool = True
    silence_warning_s: float = 10.0
    overlay: OverlaySettings = field(default_factory=OverlaySettings)
    first_run_done: bool = False
    extra: dict[str, Any] = field(default_factory=dict)  # keys this version does not know

    def transcript_folder(self) -> Path:
        return Path(self.transcript_dir) if self.transcript_dir else paths.default_transcript_dir()


@dataclass
class LoadResult:
    settings: Settings
    notice: str | None = None


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
        elif isinstance(default_value, float) and isinstance(value, int):
            kwargs[f.name] = float(value)
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
