"""A fake ``ScreenCaptureKitApi``: "sample buffers" are (float32 bytes, frames, planar) tuples
delivered through the stream's audio handler from a background thread, as ScreenCaptureKit's
queue does; ``revoke`` stops a running stream with an error, as macOS does when the permission is
withdrawn.

    api = FakeScreenCaptureKit(audio=pcm48k_stereo)
    stream = ScreenCaptureKitInputStream(..., api=api); stream.start()
    api.streams[-1].done.wait()
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from captionist.audio.screencapturekit_stream import ScreenCaptureDenied


@dataclass
class FakeSCStream:
    samplerate: int
    channels: int
    on_audio: Callable[[Any], None]
    on_stopped: Callable[[str], None]
    audio: np.ndarray | None
    planar: bool
    frames_per_buffer: int = 1024
    running: bool = False
    done: threading.Event = field(default_factory=threading.Event)
    _abort: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def _deliver(self) -> None:
        if self.audio is not None:
            audio = np.asarray(self.audio, np.float32).reshape(-1, self.channels)
            for i in range(0, len(audio), self.frames_per_buffer):
                if self._abort.is_set():
                    break
                block = audio[i : i + self.frames_per_buffer]
                data = (block.T if self.planar else block).astype(np.float32).tobytes()
                self.on_audio((data, len(block), self.planar))
        self.done.set()

    def begin(self) -> None:
        self.running = True
        self._thread = threading.Thread(target=self._deliver, daemon=True)
        self._thread.start()

    def halt(self) -> None:
        self._abort.set()
        if self._thread is not None:
            self._thread.join()
        self.running = False


class FakeScreenCaptureKit:
    def __init__(self, audio: np.ndarray | None = None, planar: bool = True, denied: bool = False) -> None:
        self.audio, self.planar, self.denied = audio, planar, denied
        self.streams: list[FakeSCStream] = []
        self.stops = 0

    def open_audio_stream(
        self,
        samplerate: int,
        channels: int,
        on_audio: Callable[[Any], None],
        on_stopped: Callable[[str], None],
    ) -> FakeSCStream:
        if self.denied:
            raise ScreenCaptureDenied("macOS refused screen and system audio recording (declined)")
        stream = FakeSCStream(samplerate, channels, on_audio, on_stopped, self.audio, self.planar)
        self.streams.append(stream)
        return stream

    def start(self, stream: FakeSCStream) -> None:
        stream.begin()

    def stop(self, stream: FakeSCStream) -> None:
        self.stops += 1
        stream.halt()

    def sample_pcm(self, sample: tuple[bytes, int, bool]) -> tuple[bytes, int, bool]:
        return sample

    def revoke(self) -> None:
        """The user withdrew the permission: running streams stop with an error."""
        self.denied = True
        for st in self.streams:
            if st.running:
                st.halt()
                st.on_stopped("The user declined TCCs for application, window, display capture")
