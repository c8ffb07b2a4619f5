"""User settings: one JSON file in the platformdirs config dir.

Usage::

    from captionist.settings import load_settings, save_settings
    result = load_settings()            # LoadResult(settings, notice)
    s = result.settings
    s.remember_latency(info, 560)       # per model (info: captionist.models.info.ModelInfo)
    s.latency_for(info), s.language_for(info)
    save_settings(s)

Upgrades: unknown keys in the file are kept untouched (so a newer version's settings survive a
downgrade) and missing keys take their defaults. Every field is validated on its own (type and
range: ``_RULES``); one that is unusable takes its default and the rest are kept (global shortcuts
that are each valid but clash take their defaults together). A file that cannot be read at all
(not UTF-8, not JSON, nested too deeply, not an object) gives all defaults. ``LoadResult.notice``
says what happened, and a copy of a bad file is kept beside it as ``settings.json.bad``.

Latency and language are remembered per model, keyed by the model's file name (a model offers
its own choices). Files from before that hold one ``delay_ms`` (Voxtral's delay, then the only
model family); it still loads and is used for Voxtral models that have no latency of their own.
A stored choice the model does not offer (an edited or hostile file) falls back to the model's
default; nothing in the file can stop the app from starting.
"""

from __future__ import annotations

import json
import math
import re
import shutil
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from captionist import paths
from captionist.atomic_file import replace_file
from captionist.feed.access import DEFAULT_PORT
from captionist.shortcut_keys import DEFAULT_KEYS, MAX_SEQUENCE_CHARS, ShortcutAction, find_clash, to_pynput
from captionist.transcript.render import FORMATS

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
    only_while_captioning: bool = False  # hidden while no session runs (ui/overlay_presence.py)
    geometry: dict[str, list[int]] = field(default_factory=dict)  # screen name -> [x, y, w, h]


@dataclass
class ShortcutSettings:
    """Global shortcuts: on or off, and one Qt key sequence per ``ShortcutAction`` ("" for none)."""

    enabled: bool = True
    start_stop: str = DEFAULT_KEYS[ShortcutAction.START_STOP]
    show_overlay: str = DEFAULT_KEYS[ShortcutAction.SHOW_OVERLAY]
    click_through: str = DEFAULT_KEYS[ShortcutAction.CLICK_THROUGH]

    def keys(self) -> dict[ShortcutAction, str]:
        return {action: getattr(self, action.value) for action in ShortcutAction}

    def set_key(self, action: ShortcutAction, sequence: str) -> None:
        setattr(self, action.value, sequence)


@dataclass
class FeedSettings:
    """The caption feed (``captionist.feed``): off until switched on; on this machine only unless
    ``lan`` (then ``token`` is required, generated when first needed)."""

    enabled: bool = False
    port: int = DEFAULT_PORT
    lan: bool = False
    token: str = ""
    text_file: bool = False  # also keep a text file of the current lines (OBS text sources)
    text_file_path: str = ""  # "" -> paths.default_captions_file()
    width: int = 42  # characters per line in the plain-text captions


@dataclass
class AlertSettings:
    """Keyword alerts: words or names that, when spoken, are highlighted and announced."""

    keywords: list[str] = field(default_factory=list)
    notify: bool = True  # a tray notification
    sound: bool = False
    color: str = "#ff9f43"  # the highlight in the overlay, the transcript and the caption page


@dataclass
class Settings:
    schema: int = SCHEMA_VERSION
    sources: list[str] = field(default_factory=list)  # device ids ("pa:3", "pulse:null.monitor")
    source_names: dict[str, str] = field(default_factory=dict)  # those ids -> the devices' names then
    model_path: str = ""
    backend: str = "auto"
    delay_ms: int = 0  # before per-model latencies: Voxtral's delay (0: none); kept for old files
    latency_ms: dict[str, int] = field(default_factory=dict)  # model file name -> latency
    language: dict[str, str] = field(default_factory=dict)  # model file name -> language ("": default)
    transcript_dir: str = ""
    transcript_format: str = "txt"
    transcript_timestamps: bool = True
    silence_warning_s: float = 10.0
    screen_reader_captions: bool = False  # each finished sentence is sent to the screen reader
    transcript_text_pt: float = 0.0  # the window's transcript text size (Ctrl++/-); 0: the default
    overlay: OverlaySettings = field(default_factory=OverlaySettings)
    shortcuts: ShortcutSettings = field(default_factory=ShortcutSettings)
    feed: FeedSettings = field(default_factory=FeedSettings)
    alerts: AlertSettings = field(default_factory=AlertSettings)
    first_run_done: bool = False
    start_at_login: bool = False  # the user's choice; the login item on disk is the real state
    extra: dict[str, Any] = field(default_factory=dict)  # keys this version does not know

    def transcript_folder(self) -> Path:
        """The chosen folder (``~`` expanded; a relative one, typed into the settings file, is taken
        from the home folder, not from wherever the app was started), else the default one."""
        if not self.transcript_dir:
            return paths.default_transcript_dir()
        folder = Path(self.transcript_dir).expanduser()
        return folder if folder.is_absolute() else Path.home() / folder

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


# --- validation: every field has a rule; a value that breaks it takes the field's default -------

Rule = Callable[[Any], bool]


def _is_int(lo: int, hi: int) -> Rule:
    return lambda v: type(v) is int and lo <= v <= hi


def _is_float(lo: float, hi: float) -> Rule:
    return lambda v: type(v) in (int, float) and math.isfinite(v) and lo <= v <= hi


def _is_text(max_len: int) -> Rule:
    return lambda v: isinstance(v, str) and len(v) <= max_len and "\0" not in v


def _is_one_of(*choices: str) -> Rule:
    return lambda v: isinstance(v, str) and v in choices


def _is_bool(v: Any) -> bool:
    return isinstance(v, bool)


def _is_colour(v: Any) -> bool:
    return isinstance(v, str) and bool(_COLOUR.fullmatch(v))


def _is_geometry(v: Any) -> bool:
    """[x, y, w, h] of a window on some screen: small coordinates, a positive size."""
    if not (isinstance(v, list) and len(v) == 4 and all(type(x) is int for x in v)):
        return False
    x, y, w, h = v
    return abs(x) <= MAX_COORD and abs(y) <= MAX_COORD and 1 <= w <= MAX_COORD and 1 <= h <= MAX_COORD


def _is_key_sequence(v: Any) -> bool:
    """A global shortcut this platform can use, or "" (none)."""
    if not _is_text(MAX_SEQUENCE_CHARS)(v):
        return False
    try:
        return v == "" or bool(to_pynput(v))
    except ValueError:
        return False


def _is_text_list(v: Any) -> bool:
    return isinstance(v, list) and len(v) <= 64 and all(_is_text(200)(x) for x in v)


_COLOUR = re.compile(r"#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})|[a-zA-Z]{1,32}")
_TOKEN = re.compile(r"[A-Za-z0-9_-]{0,128}")
MAX_COORD = 32767  # what window systems take for a position or size
MAX_LATENCY_MS = 60_000
MAX_PATH = 4096
# Where the overlay sits (``ui.overlay.POSITIONS`` plus "custom": dragged by the user).
OVERLAY_POSITIONS = ("top", "bottom", "centre", "custom")
MAX_EXTRA_DEPTH = 32  # unknown keys are kept only if nested no deeper (writing them back recurses)

_RULES: dict[str, Rule] = {
    "schema": _is_int(0, 1 << 16),
    "sources": _is_text_list,
    "model_path": _is_text(MAX_PATH),
    "backend": _is_text(64),
    "delay_ms": _is_int(0, MAX_LATENCY_MS),
    "transcript_dir": _is_text(MAX_PATH),
    "transcript_format": _is_one_of(*FORMATS),
    "transcript_timestamps": _is_bool,
    "silence_warning_s": _is_float(0.5, 86_400.0),
    "screen_reader_captions": _is_bool,
    "transcript_text_pt": _is_float(0.0, 500.0),
    "first_run_done": _is_bool,
    "start_at_login": _is_bool,
    "overlay.lines": _is_int(1, 10),
    "overlay.font_family": _is_text(200),
    "overlay.font_size": _is_int(8, 120),
    "overlay.text_color": _is_colour,
    "overlay.newest_color": _is_colour,
    "overlay.background_color": _is_colour,
    "overlay.background_opacity": _is_float(0.0, 1.0),
    "overlay.outline": _is_bool,
    "overlay.shadow": _is_bool,
    "overlay.position": _is_one_of(*OVERLAY_POSITIONS),
    "overlay.click_through": _is_bool,
    "overlay.visible": _is_bool,
    "overlay.only_while_captioning": _is_bool,
    "shortcuts.enabled": _is_bool,
    **{f"shortcuts.{action.value}": _is_key_sequence for action in ShortcutAction},
    "feed.enabled": _is_bool,
    "feed.port": _is_int(0, 65535),
    "feed.lan": _is_bool,
    "feed.token": lambda v: isinstance(v, str) and bool(_TOKEN.fullmatch(v)),
    "feed.text_file": _is_bool,
    "feed.text_file_path": _is_text(MAX_PATH),
    "feed.width": _is_int(8, 400),
    "alerts.keywords": _is_text_list,
    "alerts.notify": _is_bool,
    "alerts.sound": _is_bool,
    "alerts.color": _is_colour,
}
# Settings grouped in a dataclass of their own: the field -> its class (each of its fields has a rule).
_GROUPS: dict[str, type] = {
    "overlay": OverlaySettings,
    "shortcuts": ShortcutSettings,
    "feed": FeedSettings,
    "alerts": AlertSettings,
}
# Mapping settings (string keys): the rule for each value.
_MAP_RULES: dict[str, Rule] = {
    "latency_ms": _is_int(0, MAX_LATENCY_MS),
    "language": _is_text(64),
    "source_names": _is_text(200),
    "overlay.geometry": _is_geometry,
}


def _depth_within(value: Any, limit: int) -> bool:
    """Whether ``value`` (parsed JSON) nests no deeper than ``limit``; iterative, so any depth is safe."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return False
        if isinstance(item, dict):
            stack += [(v, depth + 1) for v in item.values()]
        elif isinstance(item, list):
            stack += [(v, depth + 1) for v in item]
    return True


def _merge(cls: type, data: dict[str, Any], problems: list[str], prefix: str = "") -> Any:
    """Build ``cls`` from ``data`` field by field: a missing field or one that breaks its rule takes
    the default (and is listed in ``problems``); a mapping keeps its valid entries."""
    kwargs: dict[str, Any] = {}
    for f in fields(cls):
        name = prefix + f.name
        if f.name == "extra" or f.name not in data:
            continue
        value = data[f.name]
        if name in _GROUPS:
            if isinstance(value, dict):
                kwargs[f.name] = _merge(_GROUPS[name], value, problems, prefix=f"{name}.")
            else:
                problems.append(name)
        elif name in _MAP_RULES:
            if not isinstance(value, dict):
                problems.append(name)
                continue
            rule = _MAP_RULES[name]
            kwargs[f.name] = {k: v for k, v in value.items() if _is_text(200)(k) and rule(v)}
            if len(kwargs[f.name]) != len(value):
                problems.append(name)
        elif _RULES[name](value):
            kwargs[f.name] = float(value) if f.type in ("float", float) else value
        else:
            problems.append(name)
    obj = cls(**kwargs)
    if cls is ShortcutSettings and find_clash(obj.keys()):  # each is valid, together they are not
        obj = ShortcutSettings(enabled=obj.enabled)
        problems.append(prefix.rstrip("."))
    if cls is Settings:
        known = {f.name for f in fields(cls)}
        obj.extra = {k: v for k, v in data.items() if k not in known and _depth_within(v, MAX_EXTRA_DEPTH)}
        problems += [k for k in data if k not in known and k not in obj.extra]
    return obj


def _keep_bad_copy(path: Path) -> Path | None:
    """Copy ``path`` to ``<name>.bad`` (replacing an older one); None if that fails."""
    bad = path.with_name(path.name + ".bad")
    try:
        shutil.copyfile(path, bad)
    except OSError:
        return None
    return bad


def load_settings(path: Path | None = None) -> LoadResult:
    """Read settings; never raises (see the module docstring)."""
    path = path or paths.settings_file()
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return LoadResult(Settings())
    except OSError as exc:
        return LoadResult(Settings(), f"could not read settings ({exc.strerror or exc}); using defaults")
    try:
        data = json.loads(raw.decode("utf-8"))
        if not isinstance(data, dict):
            raise ValueError("top level is not an object")
    except RecursionError:
        data, why = None, "nested too deeply"
    except ValueError as exc:  # bad JSON or bad UTF-8
        data, why = None, " ".join(str(exc).split())[:120]
    if data is None:
        bad = _keep_bad_copy(path)
        kept = f", old file kept as {bad}" if bad else ""
        return LoadResult(Settings(), f"settings file was corrupt ({why}); using defaults{kept}")
    problems: list[str] = []
    try:
        settings = _merge(Settings, data, problems)
    except Exception as exc:  # a rule that missed a case must not stop the app
        bad = _keep_bad_copy(path)
        return LoadResult(Settings(), f"settings file was unusable ({exc}); using defaults, kept as {bad}")
    if not problems:
        return LoadResult(settings)
    bad = _keep_bad_copy(path)
    kept = f"; the file as it was is kept as {bad}" if bad else ""
    return LoadResult(settings, f"ignored invalid settings: {', '.join(problems)}{kept}")


def save_settings(settings: Settings, path: Path | None = None) -> Path:
    """Write atomically (``replace_file``: temp file, sync, rename) so a crash never leaves half a
    file; raises OSError (full disk, no permission), the file as it was left in place."""
    path = path or paths.settings_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    data = asdict(settings)
    extra = data.pop("extra", {})
    data = {**extra, **data}
    replace_file(path, json.dumps(data, indent=2, sort_keys=True), durable=True)
    return path
