"""A fake ``sounddevice`` module: devices are declared in Python, input streams replay WAV data
(or blocks pushed by the test) through the real capture callback on a background thread, the way
PortAudio does.

    sd = FakeSoundDevice()
    sd.add_device("USB Mic", rate=48000, channels=1, audio=pcm48k)
    cap = Capture([src], sd=sd); cap.start()
    sd.streams[-1].done.wait()      # replay finished
    sd.disconnect("USB Mic")        # the device vanishes: finished_callback fires
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import numpy as np


class PortAudioError(Exception):
    pass


@dataclass
class FakeDevice:
    name: str
    rate: float
    channels: int
    audio: np.ndarray | None = None  # frames x channels, or 1-D
    hostapi: int = 0
    present: bool = True
    extra: dict[str, Any] = field(default_factory=dict)


class FakeInputStream:
    def __init__(
        self,
        sd: FakeSoundDevice,
        *,
        device: Any,
        samplerate: float,
        channels: int,
        dtype: str,
        blocksize: int,
        callback: Any,
        finished_callback: Any = None,
        **_: Any,
    ) -> None:
        self._sd = sd
        sd.answering.wait()  # a hung sound server: opening waits for its reply
        self.device = sd._resolve(device)
        if not self.device.present:
            raise PortAudioError(f"Device unavailable: {self.device.name}")
        if samplerate != self.device.rate:
            raise PortAudioError(f"Invalid sample rate {samplerate} for {self.device.name}")
        self.samplerate, self.channels, self.blocksize = samplerate, channels, blocksize
        self.callback, self.finished_callback = callback, finished_callback
        self.env_at_open = dict(sd.environ_snapshot())
        self.active = False
        self.closed = False
        self.done = threading.Event()
        self._abort = threading.Event()
        self._thread: threading.Thread | None = None
        sd.streams.append(self)

    def _blocks(self) -> list[np.ndarray]:
        audio = self.device.audio
        if audio is None:
            return []
        audio = np.asarray(audio, np.float32)
        if audio.ndim == 1:
            audio = audio[:, None]
        audio = np.repeat(audio[:, :1], self.channels, axis=1) if audio.shape[1] < self.channels else audio
        return [audio[i : i + self.blocksize, : self.channels] for i in range(0, len(audio), self.blocksize)]

    def _replay(self) -> None:
        for block in self._blocks():
            if self._abort.is_set():
                break
            self.callback(
                np.ascontiguousarray(block), len(block), None, SimpleNamespace(input_overflow=False)
            )
        self.done.set()

    def start(self) -> None:
        self.active = True
        self._thread = threading.Thread(target=self._replay, daemon=True)
        self._thread.start()

    def push(self, block: np.ndarray) -> None:
        """Deliver one block through the callback from the calling thread."""
        self.callback(np.asarray(block, np.float32).reshape(-1, self.channels), len(block), None, None)

    def stop(self) -> None:
        self._sd.answering.wait()  # so does stopping
        self._abort.set()
        if self._thread is not None:
            self._thread.join()
        if self.active and self.finished_callback:
            self.active = False
            self.finished_callback()
        self.active = False

    def close(self) -> None:
        self.stop()
        self.closed = True

    def vanish(self) -> None:
        """The device went away: stop delivering and call finished_callback, as PortAudio does."""
        self._abort.set()
        if self._thread is not None:
            self._thread.join()
        self.active = False
        if self.finished_callback:
            self.finished_callback()


class FakeSoundDevice:
    """Module-shaped fake: ``query_devices``, ``query_hostapis``, ``default``, ``InputStream``."""

    PortAudioError = PortAudioError

    def __init__(self, hostapis: tuple[str, ...] = ("ALSA",)) -> None:
        self.devices: list[FakeDevice] = []
        self.hostapis = list(hostapis)
        self.default = SimpleNamespace(device=[-1, -1])
        self.streams: list[FakeInputStream] = []
        self.answering = threading.Event()  # cleared by ``hang``: opening and stopping wait
        self.answering.set()

    def hang(self) -> None:
        """The sound server stops answering (a stopped pulseaudio) until ``answer``."""
        self.answering.clear()

    def answer(self) -> None:
        self.answering.set()

    def add_device(
        self,
        name: str,
        rate: float = 48000,
        channels: int = 1,
        audio: np.ndarray | None = None,
        hostapi: int = 0,
        default: bool = False,
    ) -> int:
        self.devices.append(FakeDevice(name, rate, channels, audio, hostapi))
        index = len(self.devices) - 1
        if default:
            self.default.device = [index, -1]
        return index

    def query_hostapis(self) -> list[dict[str, Any]]:
        return [{"name": n} for n in self.hostapis]

    def query_devices(self) -> list[dict[str, Any]]:
        return [
            {
                "index": i,
                "name": d.name,
                "hostapi": d.hostapi,
                "max_input_channels": d.channels,
                "max_output_channels": 0,
                "default_samplerate": d.rate,
            }
            for i, d in enumerate(self.devices)
            if d.present
        ]

    def _resolve(self, device: Any) -> FakeDevice:
        if isinstance(device, int) and 0 <= device < len(self.devices):
            return self.devices[device]
        for d in self.devices:
            if d.name == device:
                return d
        raise PortAudioError(f"No such device: {device!r}")

    def environ_snapshot(self) -> dict[str, str]:
        import os

        return {k: v for k, v in os.environ.items() if k.startswith("PULSE")}

    def InputStream(self, **kwargs: Any) -> FakeInputStream:  # noqa: N802 - mirrors sounddevice
        return FakeInputStream(self, **kwargs)

    def disconnect(self, name: str) -> None:
        dev = self._resolve(name)
        dev.present = False
        for st in self.streams:
            if st.device is dev and st.active:
                st.vanish()

    def reconnect(self, name: str) -> None:
        self._resolve(name).present = True
