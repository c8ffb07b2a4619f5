"""macOS system audio: an audio-only ScreenCaptureKit stream shaped like ``sounddevice.InputStream``.

Usage::

    stream = ScreenCaptureKitInputStream(device=None, samplerate=48000, channels=2, dtype="float32",
                                         blocksize=960, callback=cb, finished_callback=done)
    stream.start(); ...; stream.stop(); stream.close()

``captionist.audio.capture`` opens a ``SourceBackend.SCREENCAPTUREKIT`` source through this class,
so the audio joins the same bounded queue, resampler and mixer as a microphone. ScreenCaptureKit
hands over ``CMSampleBuffer``s (float32, usually one plane per channel) on its own dispatch queue;
``_on_audio`` turns each into frames x channels float32 and passes it to the capture callback,
which copies it into its queue. ``SCStreamDelegate``'s "stream stopped with an error" (the user
revoked the permission, the display went away) becomes ``finished_callback``, so ``Capture``'s
device-lost handling applies. ``blocksize`` is ignored: ScreenCaptureKit picks its buffer size.

The pyobjc side (shareable content, filter, configuration, delegate, sample buffers) is behind
``ScreenCaptureKitApi``; ``screencapturekit_pyobjc.PyObjCScreenCaptureKit`` is the real one and
``tests/fakes/fake_screencapturekit.py`` the fake. Opening fails with the API's exception (no
permission: ``ScreenCaptureDenied``), which ``SourceStream.open`` reports as a ``CaptureError``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np


class ScreenCaptureDenied(RuntimeError):
    """macOS refused the capture (no Screen & System Audio Recording permission, or no display)."""


class ScreenCaptureKitApi(Protocol):
    def open_audio_stream(
        self,
        samplerate: int,
        channels: int,
        on_audio: Callable[[Any], None],
        on_stopped: Callable[[str], None],
    ) -> Any:
        """A configured, not yet started audio-only SCStream; raises ``ScreenCaptureDenied``."""

    def start(self, stream: Any) -> None:
        """Start capturing; returns once macOS has started it, raises ``ScreenCaptureDenied``."""

    def stop(self, stream: Any) -> None:
        """Stop capturing; returns once macOS has stopped it (errors ignored)."""

    def sample_pcm(self, sample_buffer: Any) -> tuple[bytes, int, bool]:
        """(float32 bytes, frames, planar: one plane per channel) of an audio CMSampleBuffer."""


def default_api() -> ScreenCaptureKitApi:
    from captionist.audio.screencapturekit_pyobjc import PyObjCScreenCaptureKit

    return PyObjCScreenCaptureKit()


class ScreenCaptureKitInputStream:
    """An audio-only SCStream with ``sounddevice.InputStream``'s constructor and lifecycle."""

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
        api: ScreenCaptureKitApi | None = None,
    ) -> None:
        if dtype != "float32":
            raise ValueError(f"ScreenCaptureKit delivers float32, not {dtype}")
        self._api = api or default_api()
        self._callback, self._finished_callback = callback, finished_callback
        self.channels = channels
        self._stopping = threading.Event()
        self.stop_reason: str | None = None  # why macOS stopped the stream, if it did
        self._stream = self._api.open_audio_stream(
            int(samplerate), channels, self._on_audio, self._on_stopped
        )

    def _on_audio(self, sample_buffer: Any) -> None:
        # ScreenCaptureKit's queue: reshape the samples and hand them on; the callback copies them.
        data, frames, planar = self._api.sample_pcm(sample_buffer)
        if frames <= 0:
            return
        pcm = np.frombuffer(data, dtype=np.float32)
        if pcm.size != frames * self.channels:
            return  # a format the configuration did not ask for: drop rather than misread it
        block = pcm.reshape(self.channels, frames).T if planar else pcm.reshape(frames, self.channels)
        self._callback(np.ascontiguousarray(block), frames, None, None)

    def _on_stopped(self, reason: str) -> None:
        if self._stopping.is_set():
            return
        self.stop_reason = reason
        if self._finished_callback is not None:
            self._finished_callback()

    def start(self) -> None:
        self._api.start(self._stream)

    def stop(self) -> None:
        if not self._stopping.is_set():
            self._stopping.set()
            self._api.stop(self._stream)

    def close(self) -> None:
        self.stop()
        self._stream = None
