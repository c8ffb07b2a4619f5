"""Audio sources: input devices plus the OS's loopback / monitor sources.

Usage::

    from captionist.audio.devices import list_sources, find_source, format_device_list
    for src in list_sources():
        print(src.id, src.name, src.kind)
    src = find_source("pulse")          # id, or case-insensitive name substring
    print(format_device_list())

Ids: a PortAudio device is its index as a string (``"3"``); a PulseAudio/PipeWire source reached
through the ALSA ``pulse`` plugin is ``"pulse:<source name>"`` and opens the ``pulse`` PortAudio
device with ``PULSE_SOURCE`` set.

Sources are presented by what they are: a PulseAudio source by its description ("Built-in Audio
Analog Stereo", "Monitor of …" for system audio), and the server's default source is the default
(the one a first run ticks; never a monitor). ALSA's pseudo devices (``pulse``, ``default``,
``sysdefault``, ``pipewire``, ``dsnoop`` …) are hidden when the PulseAudio sources are listed, since
those are the same inputs under their real names; without PulseAudio they are renamed to say what
they are ("Default input (ALSA)"). On Windows, PortAudio (as bundled with sounddevice) has no WASAPI
loopback, so each output device is listed as a ``loopback`` source by ``wasapi_loopback`` (through
PyAudioWPatch; id ``wasapi-loopback:<output name>``, opened by that backend, see
``SourceBackend``); a PortAudio build that does list ``[Loopback]`` devices still gets them as
``loopback``. macOS has no system-audio device: on macOS 13+ one "All apps" ``loopback`` source is
captured through ScreenCaptureKit (``screencapturekit_audio``, after the user allows Screen & System
Audio Recording); otherwise a virtual device such as BlackHole; see ``system_audio_note``.

The sounddevice module is injected (``sd=``) so tests run without PortAudio; when it is not given
it is imported lazily and a missing PortAudio becomes ``AudioUnavailable`` with a clear message.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any

PactlRunner = Callable[..., "str | None"]  # pactl("list", "sources") -> its output, None if unavailable
SystemSourceLister = Callable[[], "list[Source]"]  # sources PortAudio cannot see; [] if unavailable

# ALSA's virtual PCMs, as PortAudio lists them, and what each one is.
ALSA_PSEUDO_DEVICES = {
    "default": "Default input (ALSA)",
    "sysdefault": "System default input (ALSA)",
    "pulse": "Default input (PulseAudio)",
    "pipewire": "Default input (PipeWire)",
    "jack": "JACK input",
    "dsnoop": "Shared input (ALSA dsnoop)",
    "dmix": "Mixed output (ALSA dmix)",
    "samplerate": "Resampled input (ALSA)",
    "speexrate": "Resampled input (ALSA)",
    "lavrate": "Resampled input (ALSA)",
    "upmix": "Upmixed input (ALSA)",
    "vdownmix": "Downmixed input (ALSA)",
}


class AudioUnavailable(RuntimeError):
    """No audio system could be used; the message says why."""


class DeviceNotFound(LookupError):
    """No source matches the id or name the user gave."""


class SourceBackend(Enum):
    """Which library opens a source (``captionist.audio.capture`` picks the stream by it)."""

    PORTAUDIO = "portaudio"  # sounddevice.InputStream
    WASAPI_LOOPBACK = "wasapi-loopback"  # captionist.audio.wasapi_loopback (PyAudioWPatch)
    SCREENCAPTUREKIT = "screencapturekit"  # captionist.audio.screencapturekit_stream (macOS 13+)


@dataclass(frozen=True)
class Source:
    """One selectable audio source."""

    id: str
    name: str
    kind: str  # "input" | "monitor" | "loopback"
    hostapi: str
    channels: int
    samplerate: float
    is_default: bool = False
    open_device: int | str | None = None  # what sounddevice opens
    env: dict[str, str] = field(default_factory=dict)  # environment set while opening
    backend: SourceBackend = SourceBackend.PORTAUDIO

    def label(self) -> str:
        tag = {"monitor": " (system audio)", "loopback": " (system audio)"}.get(self.kind, "")
        return f"{self.name}{tag}"


COMMAND_WAIT_S = 10.0  # how long a command waits for PortAudio's start (it takes < 1 s)


def import_sounddevice(wait_s: float = COMMAND_WAIT_S) -> Any:
    """The sounddevice module (PortAudio started), waiting up to ``wait_s`` for a sound server that
    does not answer (``sound_system``); ``AudioUnavailable`` says why there is none: PortAudio
    missing, or the server still silent."""
    from captionist.audio.sound_system import STUCK_SERVER_HINT, shared_sound_system

    system = shared_sound_system()
    if not system.wait(wait_s):
        raise AudioUnavailable(
            f"the sound system did not answer within {wait_s:g} s: PortAudio's start is still "
            f"waiting for it ({STUCK_SERVER_HINT})"
        )
    return system.module


def _run_pactl(*args: str) -> str | None:
    exe = shutil.which("pactl")
    if not exe:
        return None
    env = {**os.environ, "LC_ALL": "C"}  # the field names are translated otherwise
    try:
        out = subprocess.run([exe, *args], capture_output=True, text=True, timeout=3, env=env)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout if out.returncode == 0 else None


def parse_pactl_sources(listing: str) -> list[tuple[str, str]]:
    """(name, description) of each source in ``pactl list sources`` output; the short format
    (``pactl list short sources``) gives the name as the description."""
    found: list[tuple[str, str]] = []
    if "Source #" not in listing:
        for line in listing.splitlines():
            parts = line.split("\t")
            if len(parts) >= 2 and parts[1]:
                found.append((parts[1], ""))
        return found
    name = description = ""
    for line in listing.splitlines() + ["Source #end"]:
        text = line.strip()
        if text.startswith("Source #"):
            if name:
                found.append((name, description))
            name = description = ""
        elif text.startswith("Name: ") and not name:
            name = text[len("Name: ") :].strip()
        elif text.startswith("Description: ") and not description:
            description = text[len("Description: ") :].strip()
    return found


def _default_pulse_source(info: str | None) -> str | None:
    for line in (info or "").splitlines():
        if line.startswith("Default Source: "):
            return line[len("Default Source: ") :].strip() or None
    return None


def _pulse_sources(listing: str, default: str | None, pulse_device: int, rate: float) -> list[Source]:
    sources = []
    for name, description in parse_pactl_sources(listing):
        monitor = name.endswith(".monitor")
        if description:
            pretty = description
            if monitor and not pretty.lower().startswith("monitor of "):
                pretty = f"Monitor of {pretty}"
        else:
            pretty = f"Monitor of {name[: -len('.monitor')]}" if monitor else name
        sources.append(
            Source(
                id=f"pulse:{name}",
                name=pretty,
                kind="monitor" if monitor else "input",
                hostapi="PulseAudio",
                channels=2,
                samplerate=rate,
                is_default=name == default and not monitor,
                open_device=pulse_device,
                env={"PULSE_SOURCE": name},
            )
        )
    if sources and not any(s.is_default for s in sources):  # the server did not say: first microphone
        first_input = next((i for i, s in enumerate(sources) if s.kind == "input"), None)
        if first_input is not None:
            sources[first_input] = replace(sources[first_input], is_default=True)
    return sources


def _windows_loopback_sources() -> list[Source]:
    from captionist.audio.wasapi_loopback import loopback_sources_or_none

    return loopback_sources_or_none()


def _macos_system_sources() -> list[Source]:
    from captionist.audio.screencapturekit_audio import list_screencapturekit_sources

    return list_screencapturekit_sources()


def list_sources(
    sd: Any = None,
    pactl: PactlRunner | None = _run_pactl,
    platform: str = sys.platform,
    system_sources: SystemSourceLister | None = None,
) -> list[Source]:
    """All capture sources: PortAudio inputs, then PulseAudio sources where available (ALSA's
    pseudo devices hidden then, renamed otherwise); then the system-audio sources PortAudio cannot
    open (``system_sources``; default: WASAPI loopback on Windows, none without PyAudioWPatch;
    ScreenCaptureKit on macOS 13+, none without its pyobjc wrapper)."""
    sd = sd or import_sounddevice()
    hostapis = [h["name"] for h in sd.query_hostapis()]
    try:
        default_in = int(sd.default.device[0])
    except (TypeError, ValueError, IndexError):
        default_in = -1
    result: list[Source] = []
    pulse_index: int | None = None
    for dev in sd.query_devices():
        if dev["max_input_channels"] <= 0:
            continue
        index, name = int(dev["index"]), str(dev["name"])
        hostapi = hostapis[dev["hostapi"]] if 0 <= dev["hostapi"] < len(hostapis) else "?"
        if name == "pulse" and pulse_index is None:
            pulse_index = index
        if hostapi == "ALSA" and name in ALSA_PSEUDO_DEVICES:
            name = ALSA_PSEUDO_DEVICES[name]
        loopback = platform == "win32" and "[loopback]" in name.lower()
        monitor = name.lower().startswith("monitor of ") or name.endswith(".monitor")
        kind = "loopback" if loopback else "monitor" if monitor else "input"
        result.append(
            Source(
                id=str(index),
                name=name,
                kind=kind,
                hostapi=hostapi,
                channels=int(dev["max_input_channels"]),
                samplerate=float(dev["default_samplerate"]),
                is_default=index == default_in,
                open_device=index,
            )
        )
    if platform.startswith("linux") and pulse_index is not None and pactl is not None:
        listing = pactl("list", "sources")
        rate = next(s.samplerate for s in result if s.open_device == pulse_index)
        default = _default_pulse_source(pactl("info")) if listing else None
        pulse = _pulse_sources(listing, default, pulse_index, rate) if listing else []
        if pulse:
            pseudo = set(ALSA_PSEUDO_DEVICES.values())
            result = [s for s in result if not (s.hostapi == "ALSA" and s.name in pseudo)]
            result.extend(pulse)
    if platform == "win32":
        result.extend((system_sources or _windows_loopback_sources)())
    elif platform == "darwin":
        result.extend((system_sources or _macos_system_sources)())
    return result


def find_source(query: str | None, sources: list[Source]) -> Source:
    """Resolve an id, or a case-insensitive name substring; None means the default input.

    Raises ``DeviceNotFound`` with a one-line message (listing candidates when ambiguous).
    """
    if not sources:
        raise DeviceNotFound("no audio input devices found")
    if query is None or query == "":
        for s in sources:
            if s.is_default:
                return s
        return sources[0]
    for s in sources:
        if s.id == query:
            return s
    needle = query.lower()
    matches = [s for s in sources if needle in s.name.lower() or needle in s.id.lower()]
    if not matches:
        raise DeviceNotFound(f"no audio source matches {query!r}; run `captionist devices` to list them")
    exact = [s for s in matches if s.name.lower() == needle]
    if exact:
        return exact[0]
    return matches[0]


def _windows_loopback_problem() -> str | None:
    from captionist.audio.wasapi_loopback import loopback_problem

    return loopback_problem()


def system_audio_note(
    platform: str = sys.platform, loopback_problem: Callable[[], str | None] | None = None
) -> str | None:
    """A sentence for the UI about capturing the computer's own audio on this OS, if needed.

    On Windows ``loopback_problem`` (default: whether PyAudioWPatch loads) says why the
    "(system audio)" sources are missing, if they are."""
    if platform == "darwin":
        from captionist.audio.screencapturekit_audio import macos_system_audio_note

        return macos_system_audio_note()
    if platform.startswith("linux"):
        return "System audio appears as 'Monitor of …' sources (PulseAudio/PipeWire)."
    if platform == "win32":
        problem = (loopback_problem or _windows_loopback_problem)()
        if problem:
            return f"System audio sources are unavailable: {problem}."
        return "System audio appears as '<speakers> (system audio)' sources (WASAPI loopback)."
    return None


def format_device_list(
    sd: Any = None, pactl: PactlRunner | None = _run_pactl, platform: str = sys.platform
) -> str:
    """The text `captionist devices` prints: one source per line with its id."""
    sources = list_sources(sd, pactl, platform)
    if not sources:
        return "no audio input devices found"
    width = max(len(s.id) for s in sources)
    lines = []
    for s in sources:
        mark = "*" if s.is_default else " "
        lines.append(
            f"{mark} {s.id:>{width}}  {s.label()}  [{s.hostapi}, {s.channels} ch, {s.samplerate:g} Hz]"
        )
    note = system_audio_note(platform)
    if note:
        lines.append(f"# {note}")
    return "\n".join(lines)


def rediscover(lost: Source, sources: list[Source]) -> Source | None:
    """Find a source that went away among a fresh listing: same id and name, else same name.

    PortAudio renumbers devices when one is plugged back in, so the name is the stable key.
    """
    for s in sources:
        if s.id == lost.id and s.name == lost.name:
            return s
    for s in sources:
        if s.name == lost.name and s.kind == lost.kind:
            return s
    return None
