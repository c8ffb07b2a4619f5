"""Audio frontend tables baked into the model file: slaney mel filterbank and periodic Hann window.

Matches what ``VoxtralRealtimeFeatureExtractor`` uses: ``mel_filter_bank(num_frequency_bins=n_fft//2+1,
num_mel_filters=n_mel, min_frequency=0, max_frequency=8000, sampling_rate, norm="slaney",
mel_scale="slaney")`` and ``torch.hann_window(n_fft)`` (periodic).
"""

from __future__ import annotations

import numpy as np

_F_SP = 200.0 / 3.0  # slaney: Hz per mel below the break
_BREAK_HZ = 1000.0
_BREAK_MEL = _BREAK_HZ / _F_SP  # 15
_LOG_STEP = np.log(6.4) / 27.0  # slaney: mel step in log-Hz above the break


def hz_to_mel_slaney(hz: np.ndarray) -> np.ndarray:
    hz = np.asarray(hz, dtype=np.float64)
    linear = hz / _F_SP
    log = _BREAK_MEL + np.log(np.maximum(hz, _BREAK_HZ) / _BREAK_HZ) / _LOG_STEP
    return np.where(hz >= _BREAK_HZ, log, linear)


def mel_to_hz_slaney(mel: np.ndarray) -> np.ndarray:
    mel = np.asarray(mel, dtype=np.float64)
    linear = mel * _F_SP
    log = _BREAK_HZ * np.exp(_LOG_STEP * (np.maximum(mel, _BREAK_MEL) - _BREAK_MEL))
    return np.where(mel >= _BREAK_MEL, log, linear)


def mel_filterbank(
    sample_rate: int, n_fft: int, n_mel: int, f_min: float = 0.0, f_max: float = 8000.0
) -> np.ndarray:
    """Slaney-scale, slaney-normalised triangular filters: float32 [n_fft//2 + 1, n_mel] (row = FFT bin)."""
    n_bins = n_fft // 2 + 1
    bin_hz = np.linspace(0.0, sample_rate // 2, n_bins)
    edges_hz = mel_to_hz_slaney(np.linspace(hz_to_mel_slaney(f_min), hz_to_mel_slaney(f_max), n_mel + 2))

    widths = np.diff(edges_hz)  # [n_mel + 1]
    offsets = edges_hz[None, :] - bin_hz[:, None]  # [n_bins, n_mel + 2]
    rising = -offsets[:, :-2] / widths[:-1]
    falling = offsets[:, 2:] / widths[1:]
    filters = np.maximum(0.0, np.minimum(rising, falling))
    filters *= 2.0 / (edges_hz[2:] - edges_hz[:-2])[None, :]  # constant area per filter
    return filters.astype(np.float32)


def hann_window_periodic(n: int) -> np.ndarray:
    """float32 [n]: 0.5 - 0.5 cos(2 pi k / n), as ``torch.hann_window(n)``."""
    k = np.arange(n, dtype=np.float64)
    return (0.5 - 0.5 * np.cos(2.0 * np.pi * k / n)).astype(np.float32)
