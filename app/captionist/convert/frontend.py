"""Audio frontend tables baked into the model file: slaney mel filterbanks and Hann windows.

Voxtral (`mel_filterbank`, `hann_window_periodic`) matches what ``VoxtralRealtimeFeatureExtractor`` uses:
``mel_filter_bank(num_frequency_bins=n_fft//2+1, num_mel_filters=n_mel, min_frequency=0,
max_frequency=8000, sampling_rate, norm="slaney", mel_scale="slaney")`` and ``torch.hann_window(n_fft)``.

FastConformer (`mel_filterbank_f32`, `hann_window_symmetric`, `round_table`) matches the Nemotron
feature extractor: the same ``mel_filter_bank`` with ``dtype=np.float32`` (cast before the slaney
normalisation; bit-exact with ``librosa.filters.mel``, which NeMo uses), ``torch.hann_window(win_length,
periodic=False)``, and both rounded to ``mel_filters_dtype`` when that is bfloat16 / float16.
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


def _hz_to_mel_transformers(freq: np.ndarray | float) -> np.ndarray:
    """Slaney mel scale written exactly as transformers' ``hertz_to_mel`` (same float64 rounding)."""
    logstep = 27.0 / np.log(6.4)
    freq = np.asarray(freq, dtype=np.float64)
    log = _BREAK_MEL + np.log(np.maximum(freq, _BREAK_HZ) / _BREAK_HZ) * logstep
    return np.where(freq >= _BREAK_HZ, log, 3.0 * freq / 200.0)


def _mel_to_hz_transformers(mels: np.ndarray) -> np.ndarray:
    logstep = np.log(6.4) / 27.0
    freq = 200.0 * mels / 3.0
    log = _BREAK_HZ * np.exp(logstep * (np.maximum(mels, _BREAK_MEL) - _BREAK_MEL))
    return np.where(mels >= _BREAK_MEL, log, freq)


def mel_filterbank_f32(sample_rate: int, n_fft: int, n_mel: int, f_min: float, f_max: float) -> np.ndarray:
    """float32 [n_fft//2 + 1, n_mel] slaney filters, rounded as ``mel_filter_bank(dtype=np.float32)``."""
    n_bins = n_fft // 2 + 1
    mel_min, mel_max = _hz_to_mel_transformers(float(f_min)), _hz_to_mel_transformers(float(f_max))
    edges = _mel_to_hz_transformers(np.linspace(mel_min, mel_max, n_mel + 2))
    bins = np.linspace(0, sample_rate // 2, n_bins)
    widths = np.diff(edges)
    slopes = edges[None, :] - bins[:, None]
    down = -slopes[:, :-2] / widths[:-1]
    up = slopes[:, 2:] / widths[1:]
    filters = np.maximum(np.zeros(1), np.minimum(down, up)).astype(np.float32)
    filters *= (2.0 / (edges[2 : n_mel + 2] - edges[:n_mel]))[None, :]
    return filters


def hann_window_symmetric(n: int) -> np.ndarray:
    """float32 [n]: ``torch.hann_window(n, periodic=False)``, evaluated in float32 as torch does.

    Angle ``k * float32(2 pi / (n - 1))`` in float32, cosine rounded to float32, then ``-0.5 c + 0.5`` in
    float32. Equal to torch except for an occasional last-bit difference of its vectorised cosine, which
    never survives bfloat16 rounding.
    """
    if n == 1:
        return np.ones(1, dtype=np.float32)
    angle = np.arange(n, dtype=np.float32) * np.float32(2.0 * np.pi / (n - 1))
    cos = np.cos(angle.astype(np.float64)).astype(np.float32)
    return cos * np.float32(-0.5) + np.float32(0.5)


def round_table(values: np.ndarray, dtype: str) -> np.ndarray:
    """float32 copy of `values` rounded through `dtype` ("float32", "bfloat16" or "float16"), nearest-even."""
    values = np.asarray(values, dtype=np.float32)
    if dtype == "float16":
        return values.astype(np.float16).astype(np.float32)
    if dtype == "bfloat16":
        bits = values.view(np.uint32)
        rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint32) << 16
        return rounded.view(np.float32)
    return values.copy()
