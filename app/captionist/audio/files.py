"""Decode audio files into the engine's input: 1-D float32 PCM, 16 kHz, mono.

Usage::

    from captionist.audio.files import load_audio, AudioFileError
    pcm = load_audio("meeting.flac")      # np.ndarray, float32, shape (n,), 16 kHz

Decoding uses libsndfile (via ``soundfile``): WAV, FLAC, OGG/Vorbis, OGG/Opus and, with
libsndfile >= 1.1, MP3. Channels are averaged into mono; other sample rates are resampled with
``soxr`` at high quality. Any file that cannot be used raises ``AudioFileError`` (a
``ValueError``) whose message names the file and the reason.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import soundfile as sf
import soxr

TARGET_RATE = 16000


class AudioFileError(ValueError):
    """An audio file that is missing, unreadable, undecodable or empty."""


def decodable_formats() -> list[str]:
    """The container formats this machine's libsndfile can read (e.g. ``["FLAC", "MP3", ...]``)."""
    return sorted(sf.available_formats())


def to_mono(data: np.ndarray) -> np.ndarray:
    """Average the channels of ``data`` (frames x channels, or 1-D) into a 1-D float32 array."""
    if data.ndim == 1:
        return data.astype(np.float32, copy=False)
    return data.mean(axis=1, dtype=np.float32)


def resample(pcm: np.ndarray, rate: int, target_rate: int = TARGET_RATE) -> np.ndarray:
    """``pcm`` (1-D float32 at ``rate`` Hz) resampled to ``target_rate`` with soxr HQ."""
    if rate == target_rate:
        return pcm
    return soxr.resample(pcm, rate, target_rate, quality="HQ").astype(np.float32, copy=False)


def load_audio(path: str | Path, target_rate: int = TARGET_RATE) -> np.ndarray:
    """Decode ``path`` to 1-D float32 mono PCM at ``target_rate`` Hz (16 kHz by default)."""
    p = Path(path)
    if not p.exists():
        raise AudioFileError(f"audio file not found: {p}")
    if p.is_dir():
        raise AudioFileError(f"{p} is a directory, not an audio file")
    if p.stat().st_size == 0:
        raise AudioFileError(f"{p} is an empty file")
    try:
        data, rate = sf.read(str(p), dtype="float32", always_2d=True)
    except (sf.LibsndfileError, RuntimeError, TypeError) as exc:
        detail = " ".join(str(exc).split()) or type(exc).__name__
        raise AudioFileError(
            f"cannot decode {p}: {detail} (readable: WAV, FLAC, OGG, MP3 and the other libsndfile formats)"
        ) from None
    except OSError as exc:
        raise AudioFileError(f"cannot read {p}: {exc.strerror or exc}") from None
    if data.shape[0] == 0 or data.shape[1] == 0:
        raise AudioFileError(f"{p} contains no audio samples")
    pcm = to_mono(data)
    if not np.isfinite(pcm).all():
        raise AudioFileError(f"{p} contains NaN or infinite samples")
    return np.ascontiguousarray(resample(pcm, int(rate), target_rate))
