"""Endless speech-like audio with pauses, generated on the fly in fixed-size chunks (seeded).

The source material is the test clips (tests/data/audio/speech_*.wav, about 26 s in all). Each
segment is a random slice of a random clip (0.5 s to the whole clip) at a random gain (-12..+3 dB),
followed by a pause: digital silence, low noise (the noise clip at -30..-45 dB) or silence.wav, of
0.2 s to 4 s. Only the clips and the current segment are held in memory, so hours of audio cost
nothing. The same seed gives the same audio.

    from speechlike import SpeechLike
    for chunk in SpeechLike(seed=1).chunks(chunk_samples=8000, total_samples=16000 * 60):
        ...
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import soundfile as sf

AUDIO = Path(__file__).resolve().parent.parent / "tests/data/audio"
SAMPLE_RATE = 16000


def _load(name: str) -> np.ndarray:
    pcm, rate = sf.read(AUDIO / name, dtype="float32")
    if rate != SAMPLE_RATE or pcm.ndim != 1:
        raise ValueError(f"{name}: expected 16 kHz mono, got {rate} Hz, shape {pcm.shape}")
    return pcm


class SpeechLike:
    """Seeded generator of speech segments separated by pauses; see the module docstring."""

    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)
        self.speech = [_load(n) for n in ("speech_short.wav", "speech_mid.wav", "speech_long.wav")]
        self.noise = _load("noise.wav")
        self.silence = _load("silence.wav")
        self.n_speech_samples = 0  # speech samples produced so far
        self.n_pause_samples = 0

    def _speech(self) -> np.ndarray:
        clip = self.speech[int(self.rng.integers(len(self.speech)))]
        n = int(self.rng.integers(SAMPLE_RATE // 2, clip.size + 1))
        start = int(self.rng.integers(0, clip.size - n + 1))
        gain = 10.0 ** (self.rng.uniform(-12.0, 3.0) / 20.0)
        out = np.clip(clip[start : start + n] * gain, -1.0, 1.0).astype(np.float32)
        self.n_speech_samples += out.size
        return out

    def _pause(self) -> np.ndarray:
        n = int(self.rng.uniform(0.2, 4.0) * SAMPLE_RATE)
        kind = int(self.rng.integers(3))
        if kind == 0:
            out = np.zeros(n, dtype=np.float32)
        else:
            src = self.noise if kind == 1 else self.silence
            reps = -(-n // src.size)
            out = np.tile(src, reps)[:n].copy()
            if kind == 1:
                level = 10.0 ** (self.rng.uniform(-45.0, -30.0) / 20.0)
                out *= np.float32(level / max(1e-9, float(np.abs(src).max())))
        self.n_pause_samples += out.size
        return out.astype(np.float32)

    def segments(self) -> Iterator[np.ndarray]:
        while True:
            yield self._speech()
            yield self._pause()

    def chunks(self, chunk_samples: int, total_samples: int) -> Iterator[np.ndarray]:
        """Chunks of exactly ``chunk_samples`` (the last may be shorter) until ``total_samples``."""
        if chunk_samples < 1 or total_samples < 1:
            raise ValueError(f"chunk and total sizes must be positive, got {chunk_samples}, {total_samples}")
        buf = np.zeros(0, dtype=np.float32)
        emitted = 0
        seg = self.segments()
        while emitted < total_samples:
            want = min(chunk_samples, total_samples - emitted)
            while buf.size < want:
                buf = np.concatenate([buf, next(seg)])
            out, buf = buf[:want], buf[want:]
            emitted += want
            yield np.ascontiguousarray(out)
