from __future__ import annotations

import os
import struct
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import soxr

from captionist.audio import files
from captionist.audio.files import (
    BLOCK_SAMPLES,
    MAX_INPUT_SAMPLES,
    AudioFileError,
    decodable_formats,
    load_audio,
    open_audio,
)


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


def test_blocks_are_bounded_and_equal_resampling_the_whole_file(tmp_path: Path) -> None:
    src = np.stack([tone(44100, 3.0, freq=300.0), tone(44100, 3.0, freq=700.0)], axis=1)
    path = tmp_path / "cd.wav"
    sf.write(path, src, 44100, subtype="FLOAT")
    with open_audio(path) as audio:
        blocks = list(audio.blocks())
    assert (audio.rate, audio.channels, audio.frames) == (44100, 2, src.shape[0])
    assert max(b.size for b in blocks) == BLOCK_SAMPLES and len(blocks) > 10
    assert all(b.dtype == np.float32 and b.ndim == 1 for b in blocks)
    whole = soxr.resample(src.mean(axis=1, dtype=np.float32), 44100, 16000, quality="HQ")
    np.testing.assert_allclose(np.concatenate(blocks), whole, atol=1e-6)
    assert audio.samples == whole.size


def test_a_long_file_decodes_in_bounded_memory(tmp_path: Path) -> None:
    # 10 min of 22.05 kHz stereo silence: 100 KB of FLAC, 106 MB decoded whole, 38 MB at 16 kHz.
    path = tmp_path / "long.flac"
    minute = np.zeros((22050 * 60, 2), np.float32)
    with sf.SoundFile(path, "w", 22050, 2, format="FLAC", subtype="PCM_16") as f:
        for _ in range(10):
            f.write(minute)
    del minute
    tracemalloc.start()
    try:
        with open_audio(path) as audio:
            largest = max(b.size for b in audio.blocks())
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert audio.samples == 16000 * 600 and largest <= BLOCK_SAMPLES
    assert peak < 2 * 1024 * 1024, peak  # the block, not the file (38 MB)


def test_many_channels_are_read_in_bounded_pieces(tmp_path: Path) -> None:
    path = tmp_path / "multi.wav"
    sf.write(path, np.full((48000, 64), 0.25, np.float32), 48000, subtype="FLOAT")
    with open_audio(path, block_samples=16000) as audio:
        assert audio._input_frames() * audio.channels <= MAX_INPUT_SAMPLES
        pcm = np.concatenate(list(audio.blocks()))
    assert abs(pcm.size - 16000) <= 1 and np.allclose(pcm[2000:-2000], 0.25, atol=1e-4)


def _wav_with_rate(path: Path, rate: int, n_samples: int = 32000) -> None:
    """A PCM_16 mono WAV whose header claims ``rate`` Hz (what a damaged or hostile file says)."""
    data = np.zeros(n_samples, np.int16).tobytes()
    fmt = struct.pack("<HHIIHH", 1, 1, rate, rate * 2, 2, 16)
    body = b"WAVE" + b"fmt " + struct.pack("<I", 16) + fmt + b"data" + struct.pack("<I", len(data)) + data
    path.write_bytes(b"RIFF" + struct.pack("<I", len(body)) + body)


@pytest.mark.parametrize("rate", [1, 100, 2_000_000])
def test_an_absurd_header_sample_rate_is_refused(tmp_path: Path, rate: int) -> None:
    # A 64 KB WAV saying 1 Hz is 9 hours of audio: decoded whole it reached 4.6 GB.
    path = tmp_path / "odd.wav"
    _wav_with_rate(path, rate)
    with pytest.raises(AudioFileError, match=f"sample rate {rate} Hz is outside 4000..768000 Hz"):
        open_audio(path)


def test_low_but_real_rates_still_decode(tmp_path: Path) -> None:
    path = tmp_path / "phone.wav"
    sf.write(path, tone(8000, 1.0, freq=300.0), 8000, subtype="FLOAT")
    pcm = load_audio(path)
    assert abs(pcm.size - 16000) <= 1 and abs(peak_hz(pcm) - 300.0) < 2.0


def test_a_fifo_is_named_and_never_opened(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.wav"
    os.mkfifo(fifo)  # opening it for reading would block until a writer comes
    with pytest.raises(AudioFileError, match=r"pipe.wav is a named pipe \(FIFO\), not an audio file"):
        load_audio(fifo)


def test_a_directory_and_a_device_are_named(tmp_path: Path) -> None:
    with pytest.raises(AudioFileError, match="is a directory, not an audio file"):
        load_audio(tmp_path)
    with pytest.raises(AudioFileError, match="/dev/null is a character device, not an audio file"):
        load_audio("/dev/null")


def test_an_unreadable_file_says_permission_denied(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "secret.wav"
    sf.write(path, tone(16000, 0.5), 16000)

    def refuse(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(files, "open", refuse, raising=False)  # root may read anything
    with pytest.raises(AudioFileError, match=f"^cannot read {path}: Permission denied$"):
        load_audio(path)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files without read permission")
def test_an_unreadable_file_for_real(tmp_path: Path) -> None:
    path = tmp_path / "secret.wav"
    sf.write(path, tone(16000, 0.5), 16000)
    path.chmod(0)
    with pytest.raises(AudioFileError, match="Permission denied"):
        load_audio(path)


def _garbage_mp3(tmp_path: Path) -> tuple[Path, Path]:
    good = tmp_path / "good.mp3"
    sf.write(good, tone(16000, 3.0), 16000, format="MP3")
    data = bytearray(good.read_bytes())
    rng = np.random.default_rng(0)
    for i in range(200, len(data), 7):  # damage every 7th byte after the first frame header
        data[i] = int(rng.integers(0, 256))
    damaged = tmp_path / "damaged.mp3"
    damaged.write_bytes(bytes(data))
    noise = tmp_path / "noise.mp3"
    noise.write_bytes(b"\xff\xfb\x90\x00" + rng.integers(0, 256, 20000, dtype=np.uint8).tobytes())
    return damaged, noise


@pytest.mark.skipif("MP3" not in decodable_formats(), reason="this libsndfile has no MP3 support")
def test_garbage_mp3s_leave_stderr_clean(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    damaged, noise = _garbage_mp3(tmp_path)
    with open_audio(damaged) as audio:
        list(audio.blocks())
    assert audio.decoder_messages > 0  # mpg123 reported damaged frames, to us rather than the terminal
    with pytest.raises(AudioFileError, match="^cannot decode .*noise.mp3: not a recognised audio format"):
        load_audio(noise)
    assert capfd.readouterr().err == ""
