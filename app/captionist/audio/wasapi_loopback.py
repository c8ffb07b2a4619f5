"""Windows system audio: WASAPI loopback capture of an output device, through PyAudioWPatch.

Usage::

    sources = list_loopback_sources()          # default output first; [] without PyAudioWPatch
    stream = LoopbackInputStream(device=sources[0].open_device, samplerate=48000, channels=2,
                                 dtype="float32", blocksize=960, callback=cb, finished_callback=done)
    stream.start(); ...; stream.stop(); stream.close()

Why a second library: the PortAudio DLL that sounddevice bundles is built without WASAPI loopback,
so no "[Loopback]" device ever shows up through it. PyAudioWPatch is a PortAudio fork that adds one
loopback input per output device (named "<output name> [Loopback]"); it keeps PortAudio's callback
model, so ``LoopbackInputStream`` looks like ``sounddevice.InputStream`` to
``captionist.audio.capture.SourceStream`` and the audio joins the same bounded queue, resampler and
mixer as a microphone.

Sources are labelled like the Linux monitors: ``Source.name`` is the output's name (without the
"[Loopback]" suffix), ``kind`` is ``"loopback"`` (so ``label()`` adds " (system audio)"), ``id`` is
``wasapi-loopback:<output name>`` (PortAudio renumbers devices on hot-plug; the name is the stable
key that ``devices.rediscover`` uses), ``open_device`` the PyAudio device index.

Device loss: PyAudio has no finished callback. When an output is unplugged, PortAudio's WASAPI
thread stops and the stream turns inactive; a watchdog thread polls ``is_active()`` every
``watch_interval_s`` and then calls ``finished_callback`` (unless ``stop`` was called), which is
exactly what sounddevice does, so ``Capture``'s device-lost handling applies unchanged.

The ``pyaudio`` module is injected for tests (``tests/fakes/fake_pyaudiowpatch.py``); by default it
is imported lazily, and a missing or broken PyAudioWPatch raises ``LoopbackUnavailable``, which
listing turns into "no loopback sources" plus ``loopback_problem()`` for the UI notice.

Channels: WASAPI shared mode opens a loopback only at the output's mix format, so the stream
opens every channel of the device and, when the capture asked for fewer (``SourceStream`` asks for
at most 2), hands on their mean in each requested channel, so a 5.1 centre speaker is heard.

Threads: the audio callback (PortAudio's thread) only reinterprets the bytes as a float32 view
(downmixing a surround block into a small temporary) and hands it to the capture callback, which
copies it into its bounded queue.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from captionist.audio.devices import Source, SourceBackend

LOOPBACK_SUFFIX = " [Loopback]"
ID_PREFIX = "wasapi-loopback:"
HOSTAPI = "Windows WASAPI (loopback)"


class LoopbackUnavailable(RuntimeError):
    """PyAudioWPatch is missing or failed to start; the message says why."""


def import_pyaudiowpatch() -> Any:
    """Import PyAudioWPatch, turning any failure into ``LoopbackUnavailable``."""
    try:
        import pyaudiowpatch
    except Exception as exc:  # ImportError, or OSError from its PortAudio DLL
        raise LoopbackUnavailable(
            f"system audio capture needs PyAudioWPatch ({exc}); reinstall Captionist or "
            "`pip install PyAudioWPatch`"
        ) from exc
    return pyaudiowpatch


def loopback_problem(pyaudio_import: Callable[[], Any] = import_pyaudiowpatch) -> str | None:
    """Why loopback sources cannot be listed, or None when the library loads."""
    try:
        pyaudio_import()
    except LoopbackUnavailable as exc:
        return str(exc)
    return None


def _output_name(device_name: str) -> str:
    return device_name[: -len(LOOPBACK_SUFFIX)] if device_name.endswith(LOOPBACK_SUFFIX) else device_name


def list_loopback_sources(pyaudio: Any = None) -> list[Source]:
    """One ``loopback`` source per output device, the default output first.

    Raises ``LoopbackUnavailable`` when PyAudioWPatch cannot be imported or initialised.
    """
    pyaudio = pyaudio or import_pyaudiowpatch()
    try:
        pa = pyaudio.PyAudio()
    except Exception as exc:
        raise LoopbackUnavailable(f"WASAPI loopback is unavailable: {exc}") from exc
    try:
        try:
            default_name = _output_name(str(pa.get_default_wasapi_loopback()["name"]))
        except Exception:  # no output device at all, or no WASAPI host API
            default_name = None
        sources = []
        for dev in pa.get_loopback_device_info_generator():
            name = _output_name(str(dev["name"]))
            sources.append(
                Source(
                    id=f"{ID_PREFIX}{name}",
                    name=name,
                    kind="loopback",
                    hostapi=HOSTAPI,
                    channels=int(dev["maxInputChannels"]),
                    samplerate=float(dev["defaultSampleRate"]),
                    is_default=False,  # a first run ticks the microphone, never system audio
                    open_device=int(dev["index"]),
                    backend=SourceBackend.WASAPI_LOOPBACK,
                )
            )
    finally:
        pa.terminate()
    sources.sort(key=lambda s: s.name != default_name)  # stable: the default output first
    return sources


def loopback_sources_or_none() -> list[Source]:
    """``list_loopback_sources()``, or [] when the library is missing (``loopback_problem`` says why)."""
    try:
        return list_loopback_sources()
    except LoopbackUnavailable:
        return []


class LoopbackInputStream:
    """A WASAPI loopback stream with ``sounddevice.InputStream``'s constructor and lifecycle.

    ``callback(indata, frames, time_info, status)`` gets float32 frames x channels;
    ``finished_callback()`` fires once if the stream ends without ``stop`` (device lost).
    Opening failures raise the library's exception (``SourceStream.open`` reports it).
    """

    def __init__(
        self,
        *,
        device: int | str | None,
        samplerate: float,
        channels: int,
        dtype: str,
        blocksize: int,
        callback: Callable[[np.ndarray, int, Any, Any], None],
        finished_callback: Callable[[], None] | None = None,
        pyaudio: Any = None,
        watch_interval_s: float = 0.25,
    ) -> None:
        if dtype != "float32":
            raise ValueError(f"loopback streams deliver float32, not {dtype}")
        self._pyaudio = pyaudio or import_pyaudiowpatch()
        self._callback, self._finished_callback = callback, finished_callback
        self.channels = channels
        self._watch_interval_s = watch_interval_s
        self._stopping = threading.Event()
        self.lost = threading.Event()  # the watchdog saw the stream end without stop (any thread)
        self._watchdog: threading.Thread | None = None
        self._pa = self._pyaudio.PyAudio()
        try:
            # WASAPI shared mode opens only at the mix format's channel count (6 for 5.1 speakers);
            # the callback downmixes to the ``channels`` the capture asked for.
            self.device_channels = (
                int(self._pa.get_device_info_by_index(int(device))["maxInputChannels"]) or channels
                if device is not None
                else channels
            )
            self._stream = self._pa.open(
                format=self._pyaudio.paFloat32,
                channels=self.device_channels,
                rate=int(samplerate),
                input=True,
                input_device_index=int(device) if device is not None else None,
                frames_per_buffer=blocksize,
                stream_callback=self._on_audio,
                start=False,
            )
        except Exception:
            self._pa.terminate()
            raise

    def _on_audio(self, in_data: bytes | None, frame_count: int, time_info: Any, status: int) -> tuple:
        # PortAudio's thread: a view of the bytes, handed on; the capture callback copies it.
        if in_data:
            block = np.frombuffer(in_data, dtype=np.float32).reshape(-1, self.device_channels)
            if self.device_channels != self.channels:  # every speaker counts (the centre carries speech)
                block = np.repeat(block.mean(axis=1, keepdims=True, dtype=np.float32), self.channels, axis=1)
            self._callback(block, frame_count, time_info, status)
        return (None, self._pyaudio.paContinue)

    def _watch(self) -> None:
        while not self._stopping.wait(self._watch_interval_s):
            if not self._stream.is_active():
                if not self._stopping.is_set():
                    if self._finished_callback is not None:
                        self._finished_callback()
                    self.lost.set()  # after the callback: a waiter sees its effect
                return

    def start(self) -> None:
        self._stream.start_stream()
        self._watchdog = threading.Thread(target=self._watch, name="wasapi-loopback-watch", daemon=True)
        self._watchdog.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._watchdog is not None and self._watchdog is not threading.current_thread():
            self._watchdog.join(timeout=2.0)
        try:
            self._stream.stop_stream()
        except Exception:  # a stream whose device vanished may refuse to stop; close() still runs
            if not self.lost.is_set():
                raise

    def close(self) -> None:
        self._stopping.set()
        try:
            self._stream.close()
        finally:
            self._pa.terminate()
