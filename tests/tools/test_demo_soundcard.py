"""The demo model's sound-card augmentation (tools/demo_soundcard.py)."""

from __future__ import annotations

import numpy as np
import soxr

from tools.demo_data import SAMPLE_RATE, Utterance, WordSpan
from tools.demo_soundcard import augment, capture_resample, equalise, reverberate, round_trip


def _utterance(seed: int = 0) -> Utterance:
    rng = np.random.default_rng(seed)
    t = np.arange(int(1.5 * SAMPLE_RATE)) / SAMPLE_RATE
    audio = np.zeros(t.size, np.float32)
    span = slice(4000, 16000)
    audio[span] = (
        0.4 * np.sin(2 * np.pi * 220 * t[span]) * (1 + 0.5 * np.sin(2 * np.pi * 3 * t[span]))
    ).astype(np.float32)
    audio += 0.001 * rng.standard_normal(t.size).astype(np.float32)
    return Utterance(audio=audio, words=(WordSpan("go", 4000, 16000),), voice="test", speed=175, pitch=50)


def _band_energy(x: np.ndarray, lo: float, hi: float) -> float:
    spec = np.abs(np.fft.rfft(x.astype(np.float64))) ** 2
    f = np.fft.rfftfreq(x.size, 1 / SAMPLE_RATE)
    return float(spec[(f >= lo) & (f < hi)].sum())


def test_augment_keeps_words_length_and_range_and_is_seeded() -> None:
    u = _utterance()
    outs = [augment(np.random.default_rng(s), u) for s in range(30)]
    for out in outs:
        assert out.words == u.words and out.audio.size == u.audio.size and out.audio.dtype == np.float32
        assert np.all(np.isfinite(out.audio)) and np.all(np.abs(out.audio) <= 1.0)
    np.testing.assert_array_equal(outs[3].audio, augment(np.random.default_rng(3), u).audio)
    assert len({out.audio.tobytes() for out in outs}) == len(outs)  # every draw differs


def test_the_capture_path_resampler_does_not_depend_on_block_size() -> None:
    x = np.random.default_rng(1).standard_normal(48000).astype(np.float32) * 0.1
    whole = soxr.resample(x, 48000, SAMPLE_RATE, quality="HQ")
    for block in (480, 960, 4800):
        np.testing.assert_allclose(capture_resample(x, 48000, block), whole, atol=1e-6)


def test_a_round_trip_keeps_speech_band_content_aligned() -> None:
    u = _utterance()
    for seed in range(12):
        back = round_trip(np.random.default_rng(seed), u.audio)
        assert back.size == u.audio.size
        # Same signal, no shift: the speech-band content correlates almost perfectly.
        assert np.corrcoef(back[4000:16000], u.audio[4000:16000])[0, 1] > 0.98


def test_equalise_limits_the_band() -> None:
    x = np.random.default_rng(2).standard_normal(SAMPLE_RATE).astype(np.float32) * 0.1
    y = equalise(np.random.default_rng(5), x)
    # Whatever was drawn, the low-pass is at 7.8 kHz or below and the high-pass at 40 Hz or above.
    assert _band_energy(y, 7900, 8000) < 0.5 * _band_energy(x, 7900, 8000)
    assert _band_energy(y, 0, 30) < _band_energy(x, 0, 30)


def test_reverberation_leaves_a_decaying_tail() -> None:
    u = _utterance()
    wet = reverberate(np.random.default_rng(0), u.audio)
    after = slice(16000 + 800, 16000 + 1600)  # 50-100 ms after the sound stops
    assert np.sqrt(np.mean(wet[after] ** 2)) > 10 * np.sqrt(np.mean(u.audio[after] ** 2))
    assert wet.size == u.audio.size
