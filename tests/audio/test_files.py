from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from captionist.audio.files import AudioFileError, decodable_formats, load_audio


def tone(rate: int, seconds: float, freq: float = 440.0, amp: float = 0.5) -> np.ndarray:
    t = np.arange(int(rate * seconds)) / rate
    return (amp * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def peak_hz(pcm: np.ndarray, rate: int = 16000) -> float:
    spectrum = np.abs(np.fft.rfft(pcm * np.hanning(pcm.size)))
    return float(np.fft.rfftfreq(pcm.size, 1 / rate)[np.argmax(spectrum)])


@pytest.mark.parametrize(
    ("name", "fmt", "subtype", "tol"),
    [
        ("a.wav", "WAV", "PCM_16", 1e-4),
        ("a.wav", "WAV", "FLOAT", 0.0),
        ("a.flac", "FLAC", "PCM_24", 1e-6),
        ("a.ogg", "OGG", "VORBIS", None),
    ],
)
def test_16k_mono_files_decode(tmp_path: Path, name: str, fmt: str, subtype: str, tol: float | None) -> None:
    src = tone(16000, 1.0, freq=523.0)
    path = tmp_path / name
    sf.write(path, src, 16000, format=fmt, subtype=subtype)
    pcm = load_audio(path)
    assert pcm.dtype == np.float32 and pcm.ndim == 1 and pcm.size == src.size
    if tol is None:  # lossy: same pitch and loudness
        assert abs(peak_hz(pcm) - 523.0) < 2.0
        assert np.sqrt(np.mean(pcm**2)) == pytest.approx(np.sqrt(np.mean(src**2)), rel=0.05)
    else:
        np.testing.assert_allclose(pcm, src, atol=tol)


@pytest.mark.skipif("MP3" not in decodable_formats(), reason="this libsndfile has no MP3 support")
def test_mp3_decodes(tmp_path: Path) -> None:
    path = tmp_path / "a.mp3"
    sf.write(path, tone(16000, 1.0), 16000, format="MP3")
    pcm = load_audio(path)
    assert pcm.dtype == np.float32 and abs(pcm.size - 16000) < 2000
    assert abs(peak_hz(pcm) - 440.0) < 3.0


def test_stereo_is_averaged(tmp_path: Path) -> None:
    left = tone(16000, 0.5, freq=300.0)
    right = tone(16000, 0.5, freq=700.0, amp=0.25)
    path = tmp_path / "stereo.wav"
    sf.write(path, np.stack([left, right], axis=1), 16000, subtype="FLOAT")
    np.testing.assert_allclose(load_audio(path), (left + right) / 2, atol=1e-7)


def test_44k1_is_resampled_to_16k(tmp_path: Path) -> None:
    path = tmp_path / "cd.flac"
    sf.write(path, np.stack([tone(44100, 2.0), tone(44100, 2.0)], axis=1), 44100, subtype="PCM_16")
    pcm = load_audio(path)
    assert pcm.dtype == np.float32
    assert abs(pcm.size - 32000) <= 1
    assert abs(peak_hz(pcm) - 440.0) < 1.0
    middle = pcm[4000:-4000]
    assert np.max(np.abs(middle)) == pytest.approx(0.5, abs=0.01)
    expected = tone(16000, 2.0)[4000:-4000]
    assert np.sqrt(np.mean((middle - expected) ** 2)) < 0.01  # same phase: no delay added


def test_other_target_rate(tmp_path: Path) -> None:
    path = tmp_path / "a.wav"
    sf.write(path, tone(16000, 1.0), 16000)
    assert load_audio(path, target_rate=8000).size == 8000


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: None, "audio file not found"),
        (lambda p: p.mkdir(), "is a directory"),
        (lambda p: p.write_bytes(b""), "is an empty file"),
        (lambda p: p.write_bytes(b"RIFF....WAVEjunk" * 8), "cannot decode"),
        (lambda p: p.write_text("hello, I am a text file"), "cannot decode"),
        (lambda p: sf.write(p, np.zeros((0, 2), np.float32), 16000, format="WAV"), "no audio samples"),
        (
            lambda p: sf.write(p, np.array([0.1, np.nan], np.float32), 16000, format="WAV", subtype="FLOAT"),
            "NaN",
        ),
    ],
)
def test_bad_files_give_a_clear_error(tmp_path: Path, make, message: str) -> None:
    path = tmp_path / "input.wav"
    make(path)
    with pytest.raises(AudioFileError, match=message) as info:
        load_audio(path)
    assert isinstance(info.value, ValueError)
    assert str(path) in str(info.value) and "\n" not in str(info.value)
