"""Echo cancellation: take out of a microphone what the loudspeakers play.

Usage::

    canceller = EchoCanceller()                   # EchoUnavailable if the library is missing
    clean = canceller.process(mic_chunk, system_chunk)   # same length, float32, 16 kHz mono

A call on loudspeakers reaches the microphone too, 50-300 ms after the system audio has it, so
mixing the two puts every word of the other side in twice and the model hears the echo as words
of its own (README, "Words doubled or wrong"). ``EchoCanceller`` removes it with WebRTC's AEC3
(the ``pywebrtc-audio`` bindings: the canceller Chrome uses, with its own delay estimation and
double-talk handling), given the system audio as mixed beside the microphone as the reference.
The microphone's own speech passes (about 8 ms later); for the first seconds, until the canceller
has learnt the room, some echo remains. Not thread-safe: the mixer's one consumer thread owns it.
"""

from __future__ import annotations

import numpy as np

SAMPLE_RATE = 16000


class EchoUnavailable(RuntimeError):
    """The echo canceller cannot be made here; the message says why."""


def _clean(pcm: np.ndarray) -> np.ndarray:
    """float32 in [-1, 1] with no NaN or infinity: one would spoil the canceller's filter for good."""
    pcm = np.asarray(pcm, dtype=np.float32)
    if not np.isfinite(pcm).all():
        pcm = np.nan_to_num(pcm, nan=0.0, posinf=1.0, neginf=-1.0)
    return np.ascontiguousarray(np.clip(pcm, -1.0, 1.0))


class EchoCanceller:
    def __init__(self) -> None:
        try:
            from pywebrtc_audio import EchoCanceller as Aec3
        except ImportError as exc:
            raise EchoUnavailable(f"echo cancellation is unavailable ({exc})") from None
        self._aec = Aec3(sample_rate=SAMPLE_RATE, num_channels=1)

    def process(self, near: np.ndarray, far: np.ndarray) -> np.ndarray:
        """``near`` (the microphone) without what of ``far`` (the system audio, as long) it heard."""
        if near.size != far.size:
            raise ValueError(f"echo cancellation needs equal lengths; got {near.size} and {far.size}")
        if near.size == 0:
            return np.zeros(0, np.float32)
        return np.asarray(self._aec.process(_clean(near), _clean(far)), dtype=np.float32)
