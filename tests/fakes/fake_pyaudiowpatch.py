"""A fake ``pyaudiowpatch`` module: output devices are declared in Python, each gets a
"<name> [Loopback]" input as PyAudioWPatch adds, and callback streams replay float32 audio through
the real stream callback on a background thread, the way PortAudio does.

    pa = FakePyAudioWPatch()
    pa.add_output("Speakers (Realtek)", rate=48000, channels=2, audio=pcm, default=True)
    src = list_loopback_sources(pyaudio=pa)[0]
    stream = LoopbackInputStream(device=src.open_device, ..., pyaudio=pa)
    pa.unplug("Speakers (Realtek)")   # the stream turns inactive; no callback says so
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np


class FakeOSError(OSError):
    pass


@dataclass
class FakeOutput:
    name: str
    rate: float
    channels: int
    audio: np.ndarray | None = None  # frames x channels float32, replayed once
    present: bool = True


class FakeStream:
    def __init__(self, module: FakePyAudioWPatch, device: FakeOutput, kwargs: dict[str, Any]) -> None:
        self.module, self.device, self.kwargs = module, device, kwargs
        self.callback: Callable[..., tuple] = kwargs["stream_callback"]
        self.channels, self.blocksize = int(kwargs["channels"]), int(kwargs["frames_per_buffer"])
        self.active = False
        self.closed = False
        self.done = threading.Event()
        self._abort = threading.Event()
        self._thread: threading.Thread | None = None

    def _replay(self) -> None:
        audio = self.device.audio
        if audio is not None:
            audio = np.ascontiguousarray(np.asarray(audio, np.float32).reshape(-1, self.channels))
            for i in range(0, len(audio), self.blocksize):
                if self._abort.is_set():
                    break
                block = audio[i : i + self.blocksize]
                result = self.callback(block.tobytes(), len(block), {}, 0)
                assert result[1] == self.module.paContinue
        self.done.set()

    def start_stream(self) -> None:
        self.active = True
        self._thread = threading.Thread(target=self._replay, daemon=True)
        self._thread.start()

    def stop_stream(self) -> None:
        self._abort.set()
        if self._thread is not None:
            self._thread.join()
        self.active = False

    def close(self) -> None:
        self.stop_stream()
        self.closed = True

    def is_active(self) -> bool:
        return self.active

    def vanish(self) -> None:
        """PortAudio's WASAPI thread ends: no more callbacks, and the stream reads as inactive."""
        self._abort.set()
        if self._thread is not None:
            self._thread.join()
        self.active = False


class FakePyAudio:
    def __init__(self, module: FakePyAudioWPatch) -> None:
        self.module = module
        self.terminated = False
        module.instances.append(self)

    def _loopbacks(self) -> list[tuple[int, FakeOutput]]:
        return [(i, d) for i, d in enumerate(self.module.outputs) if d.present]

    def get_loopback_device_info_generator(self) -> Iterator[dict[str, Any]]:
        for index, dev in self._loopbacks():
            yield {
                "index": index,
                "name": f"{dev.name} [Loopback]",
                "maxInputChannels": dev.channels,
                "maxOutputChannels": 0,
                "defaultSampleRate": dev.rate,
                "isLoopbackDevice": True,
            }

    def get_device_info_by_index(self, index: int) -> dict[str, Any]:
        for info in self.get_loopback_device_info_generator():
            if info["index"] == index:
                return info
        raise FakeOSError(f"[Errno -9996] Invalid device index: {index}")

    def get_default_wasapi_loopback(self) -> dict[str, Any]:
        for info in self.get_loopback_device_info_generator():
            if self.module.outputs[info["index"]].name == self.module.default_output:
                return info
        raise FakeOSError("no default output device")

    def open(self, **kwargs: Any) -> FakeStream:
        assert kwargs["input"] is True and kwargs["format"] == self.module.paFloat32
        assert kwargs.get("start") is False
        index = kwargs["input_device_index"]
        if not (0 <= index < len(self.module.outputs)) or not self.module.outputs[index].present:
            raise FakeOSError(f"[Errno -9996] Invalid device: {index}")
        dev = self.module.outputs[index]
        if int(kwargs["rate"]) != int(dev.rate):
            raise FakeOSError(f"[Errno -9997] Invalid sample rate {kwargs['rate']}")
        stream = FakeStream(self.module, dev, kwargs)
        self.module.streams.append(stream)
        return stream

    def terminate(self) -> None:
        self.terminated = True


class FakePyAudioWPatch:
    """Module-shaped fake: ``PyAudio``, ``paFloat32``, ``paContinue``."""

    paFloat32 = 1  # noqa: N815 - mirrors pyaudiowpatch
    paContinue = 0  # noqa: N815

    def __init__(self) -> None:
        self.outputs: list[FakeOutput] = []
        self.default_output: str | None = None
        self.streams: list[FakeStream] = []
        self.instances: list[FakePyAudio] = []

    def PyAudio(self) -> FakePyAudio:  # noqa: N802 - mirrors pyaudiowpatch
        return FakePyAudio(self)

    def add_output(
        self,
        name: str,
        rate: float = 48000,
        channels: int = 2,
        audio: np.ndarray | None = None,
        default: bool = False,
    ) -> int:
        self.outputs.append(FakeOutput(name, rate, channels, audio))
        if default:
            self.default_output = name
        return len(self.outputs) - 1

    def unplug(self, name: str) -> None:
        for dev in self.outputs:
            if dev.name == name:
                dev.present = False
                for st in self.streams:
                    if st.device is dev and st.active:
                        st.vanish()

    def plug(self, name: str) -> None:
        for dev in self.outputs:
            if dev.name == name:
                dev.present = True
