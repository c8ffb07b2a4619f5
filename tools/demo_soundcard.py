"""What a sound card, a room and the capture path do to speech, as training augmentation for the
demo model (issue 15; dev-only; numpy and soxr only).

A live caption never hears the clean 16 kHz synthesis: it hears speech played and recorded at
44.1 or 48 kHz (every laptop microphone and PulseAudio/PipeWire monitor), resampled by the
player, the sound server and our capture path (``captionist.audio.capture``: a streaming
``soxr.ResampleStream`` fed the device's blocks), through a band-limited microphone or speaker, in
a room, over noise. ``augment`` applies a random chain of these to a 16 kHz utterance and keeps
its length, so the word spans and their slots are unchanged::

    rng = np.random.default_rng(0)
    heard = augment(rng, utt)              # an Utterance with the same words, other audio

Each stage is drawn on its own (probabilities in ``P``): equalisation and band limits (a
high-pass at 40-300 Hz, a low-pass at 3.4-7.8 kHz, a few broad +/-5 dB bumps), room reverberation
(exponentially decaying noise, RT60 0.15-0.7 s, 0-12 dB direct-to-reverberant ratio), coloured
noise (white, pink or brown, 12-40 dB SNR), a gain change with now and then a little clipping,
and a round trip through 44.1 or 48 kHz (soxr at any quality one way, the capture path's own
streaming resampler in blocks of 10-100 ms or a cheap linear interpolation the other way).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import soxr

from tools.demo_data import SAMPLE_RATE, Utterance

P = {"eq": 0.6, "reverb": 0.3, "noise": 0.5, "clip": 0.04, "round_trip": 0.7}
DEVICE_RATES = (44100, 48000)
SOXR_QUALITIES = ("QQ", "LQ", "MQ", "HQ", "VHQ")
BLOCK_MS = (10, 20, 30, 50, 100)  # capture block sizes (the app's default is among them)
HIGH_PASS_HZ = (40.0, 300.0)
LOW_PASS_HZ = (3400.0, 7800.0)
EQ_BUMPS = (0, 3)  # how many broad peaks/dips
EQ_BUMP_DB = 5.0
RT60_S = (0.15, 0.7)
DRR_DB = (0.0, 12.0)
NOISE_SNR_DB = (12.0, 40.0)
GAIN_DB = (-12.0, 6.0)


def _fft_size(n: int) -> int:
    """The power of two at or above ``n`` (numpy's FFT is slow for sizes with large prime factors)."""
    return 1 << max(0, int(n - 1).bit_length())


def equalise(rng: np.random.Generator, audio: np.ndarray) -> np.ndarray:
    """A random band limit and a few broad peaks or dips, applied in the frequency domain (on a
    zero-padded copy, so the filter's ringing does not wrap around)."""
    size = _fft_size(audio.size + SAMPLE_RATE // 10)
    spec = np.fft.rfft(audio.astype(np.float64), size)
    f = np.fft.rfftfreq(size, 1.0 / SAMPLE_RATE)
    hp = rng.uniform(*HIGH_PASS_HZ)
    lp = rng.uniform(*LOW_PASS_HZ)
    order_hp, order_lp = int(rng.integers(1, 5)), int(rng.integers(2, 9))
    with np.errstate(divide="ignore"):
        gain = 1.0 / np.sqrt(1.0 + (hp / np.maximum(f, 1e-3)) ** (2 * order_hp))
    gain /= np.sqrt(1.0 + (f / lp) ** (2 * order_lp))
    log_f = np.log2(np.maximum(f, 20.0))
    for _ in range(int(rng.integers(EQ_BUMPS[0], EQ_BUMPS[1] + 1))):
        centre = rng.uniform(np.log2(150.0), np.log2(7000.0))
        width = rng.uniform(0.5, 2.0)  # octaves
        gain *= 10.0 ** (
            rng.uniform(-EQ_BUMP_DB, EQ_BUMP_DB) * np.exp(-0.5 * ((log_f - centre) / width) ** 2) / 20.0
        )
    return np.fft.irfft(spec * gain, n=size)[: audio.size].astype(np.float32)


def reverberate(rng: np.random.Generator, audio: np.ndarray) -> np.ndarray:
    """A synthetic room: the direct sound plus exponentially decaying noise (a late reverb tail),
    mixed at a random direct-to-reverberant ratio; the output has the input's length."""
    rt60 = rng.uniform(*RT60_S)
    n = int(rt60 * SAMPLE_RATE)
    t = np.arange(n) / SAMPLE_RATE
    tail = rng.standard_normal(n) * np.exp(-6.9 * t / rt60)
    tail[: int(0.002 * SAMPLE_RATE)] = 0.0  # the first reflections arrive after the direct sound
    drr = 10.0 ** (rng.uniform(*DRR_DB) / 10.0)
    tail *= np.sqrt(1.0 / (drr * max(float(np.sum(tail**2)), 1e-12)))
    rir = tail
    rir[0] += 1.0
    size = _fft_size(audio.size + n)
    wet = np.fft.irfft(np.fft.rfft(audio, size) * np.fft.rfft(rir, size), size)[: audio.size]
    return wet.astype(np.float32)


def coloured_noise(rng: np.random.Generator, n: int) -> np.ndarray:
    """Unit-RMS white, pink (1/f) or brown (1/f^2) noise."""
    exponent = float(rng.choice([0.0, 1.0, 2.0]))
    size = _fft_size(n)
    spec = np.fft.rfft(rng.standard_normal(size))
    f = np.fft.rfftfreq(size, 1.0 / SAMPLE_RATE)
    spec /= np.maximum(f, 20.0) ** (exponent / 2.0)
    noise = np.fft.irfft(spec, n=size)[:n]
    return (noise / max(float(np.sqrt(np.mean(noise**2))), 1e-12)).astype(np.float32)


def add_noise(rng: np.random.Generator, audio: np.ndarray, utt: Utterance) -> np.ndarray:
    speech = np.concatenate([audio[w.start : w.end] for w in utt.words]) if utt.words else audio
    rms = float(np.sqrt(np.mean(speech.astype(np.float64) ** 2)))
    level = max(rms, 1e-4) * 10.0 ** (-rng.uniform(*NOISE_SNR_DB) / 20.0)
    return audio + level * coloured_noise(rng, audio.size)


def _linear(audio: np.ndarray, src: int, dst: int) -> np.ndarray:
    n = int(round(audio.size * dst / src))
    return np.interp(np.arange(n) * (src / dst), np.arange(audio.size), audio).astype(np.float32)


def capture_resample(audio: np.ndarray, rate: int, block: int) -> np.ndarray:
    """``audio`` at ``rate`` to 16 kHz as the capture path does: one ``soxr.ResampleStream`` fed
    ``block`` samples at a time."""
    stream = soxr.ResampleStream(rate, SAMPLE_RATE, 1, dtype="float32")
    pieces = []
    for start in range(0, audio.size, block):
        end = start + block
        pieces.append(stream.resample_chunk(audio[start:end], last=end >= audio.size))
    return np.concatenate(pieces).astype(np.float32)


def round_trip(rng: np.random.Generator, audio: np.ndarray) -> np.ndarray:
    """16 kHz -> a device rate -> 16 kHz with randomly chosen resamplers; same length out."""
    rate = int(rng.choice(DEVICE_RATES))
    up = str(rng.choice(SOXR_QUALITIES + ("linear",)))
    if up == "linear":
        high = _linear(audio, SAMPLE_RATE, rate)
    else:
        high = soxr.resample(audio, SAMPLE_RATE, rate, quality=up).astype(np.float32)
    down = rng.random()
    if down < 0.6:
        back = capture_resample(high, rate, rate * int(rng.choice(BLOCK_MS)) // 1000)
    elif down < 0.85:
        back = soxr.resample(high, rate, SAMPLE_RATE, quality=str(rng.choice(SOXR_QUALITIES))).astype(
            np.float32
        )
    else:
        back = _linear(high, rate, SAMPLE_RATE)
    out = np.zeros(audio.size, np.float32)
    out[: min(audio.size, back.size)] = back[: audio.size]
    return out


def augment(rng: np.random.Generator, utt: Utterance) -> Utterance:
    """``utt`` as a random sound card, room and capture path would deliver it (same words and
    spans, same length, float32 in [-1, 1])."""
    audio = utt.audio.astype(np.float32)
    if rng.random() < P["eq"]:
        audio = equalise(rng, audio)
    if rng.random() < P["reverb"]:
        audio = reverberate(rng, audio)
    if rng.random() < P["noise"]:
        audio = add_noise(rng, audio, utt)
    peak = max(float(np.abs(audio).max()), 1e-9)
    gain = 10.0 ** (rng.uniform(*GAIN_DB) / 20.0)
    if rng.random() < P["clip"]:
        gain = rng.uniform(1.05, 1.5) / peak  # the loudest peaks clip
    else:
        gain = min(gain, 0.99 / peak)
    audio = np.clip(audio * gain, -1.0, 1.0)
    if rng.random() < P["round_trip"]:
        audio = round_trip(rng, audio)
    return dataclasses.replace(utt, audio=np.clip(audio, -1.0, 1.0).astype(np.float32))
