"""Decode audio files into the engine's input: 1-D float32 PCM, 16 kHz, mono, block by block.

Usage::

    from captionist.audio.files import open_audio, load_audio, AudioFileError
    with open_audio("meeting.flac") as audio:   # checks the path and the header; decodes nothing yet
        for block in audio.blocks():            # float32, shape (<= BLOCK_SAMPLES,), 16 kHz
            stream.feed(block)
    audio.samples, audio.decoder_messages       # samples produced; damaged-data reports (MP3)

    pcm = load_audio("short.wav")               # the whole file as one array (short clips, tests)

Decoding uses libsndfile (via ``soundfile``): WAV, FLAC, OGG/Vorbis, OGG/Opus and, with
libsndfile >= 1.1, MP3. Files are read ``BLOCK_SAMPLES`` output samples at a time (never more than
``MAX_INPUT_SAMPLES`` decoded values), channels are averaged into mono and other sample rates go
through one streaming ``soxr.ResampleStream`` (HQ, the same samples as resampling the whole file),
so memory is bounded by the block whatever the file's length or header says.

What the decoder libraries write to the process's stderr while decoding (mpg123's reports on
damaged frames) is captured, not shown: ``AudioFile.decoder_messages`` counts the lines.

Any file that cannot be used raises ``AudioFileError`` (a ``ValueError``) whose one-line message
names the file and the reason: not found, a directory, a named pipe, a device, empty, permission
denied, not a recognised audio format, a sample rate outside ``MIN_RATE``..``MAX_RATE``, no
samples, NaN or infinite samples. Opening never blocks (a FIFO is refused before it is opened).
A ``AudioFile`` is owned by one thread.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import IO

import numpy as np
import soundfile as sf
import soxr

TARGET_RATE = 16000
BLOCK_SAMPLES = 4000  # output samples per block: 250 ms at 16 kHz
MAX_INPUT_SAMPLES = 1 << 18  # decoded values (frames x channels) per read: 1 MiB of float32
MIN_RATE = 4000  # below this a file cannot hold speech (usually a broken header)
MAX_RATE = 768000
READABLE = "readable: WAV, FLAC, OGG, MP3 and the other libsndfile formats"
_UNRECOGNISED = (1, 7)  # libsndfile: format not recognised / "not a regular file (possibly a pipe?)"


class AudioFileError(ValueError):
    """An audio file that is missing, unreadable, undecodable or empty."""


def decodable_formats() -> list[str]:
    """The container formats this machine's libsndfile can read (e.g. ``["FLAC", "MP3", ...]``)."""
    return sorted(sf.available_formats())


def to_mono(data: np.ndarray) -> np.ndarray:
    """Average the channels of ``data`` (frames x channels, or 1-D) into a 1-D float32 array."""
    if data.ndim == 1:
        return data.astype(np.float32, copy=False)
    if data.shape[1] == 1:
        return data[:, 0].astype(np.float32, copy=False)
    return data.mean(axis=1, dtype=np.float32)


def resample(pcm: np.ndarray, rate: int, target_rate: int = TARGET_RATE) -> np.ndarray:
    """``pcm`` (1-D float32 at ``rate`` Hz) resampled to ``target_rate`` with soxr HQ."""
    if rate == target_rate:
        return pcm
    return soxr.resample(pcm, rate, target_rate, quality="HQ").astype(np.float32, copy=False)


_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def check_audio_path(path: str | Path) -> Path:
    """``path`` if it is a non-empty regular file this process may read; ``AudioFileError`` saying
    what it is otherwise. Never opens anything but a regular file, so it cannot block."""
    p = Path(path)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        raise AudioFileError(f"audio file not found: {p}") from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the name
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise AudioFileError(f"cannot read {p}: {reason}") from None
    for is_kind, kind in _KINDS:
        if is_kind(st.st_mode):
            raise AudioFileError(f"{p} is {kind}, not an audio file")
    if not stat.S_ISREG(st.st_mode):
        raise AudioFileError(f"{p} is not a regular file, not an audio file")
    if st.st_size == 0:
        raise AudioFileError(f"{p} is an empty file")
    try:
        with open(p, "rb"):
            pass
    except OSError as exc:
        raise AudioFileError(f"cannot read {p}: {exc.strerror or exc}") from None
    return p


class _StderrCapture:
    """Redirects file descriptor 2 into a temporary file around decoder calls; counts the lines.

    libsndfile's MP3 decoder (mpg123) prints reports on damaged frames straight to fd 2. Where fd 2
    cannot be duplicated (no console), calls run uncaptured.
    """

    def __init__(self) -> None:
        self.lines = 0
        self._sink: int | None = None
        self._file: IO[bytes] | None = None
        try:
            self._file = tempfile.TemporaryFile(prefix="captionist-decoder-")
            self._sink = self._file.fileno()
        except OSError:
            self._file = None

    def __enter__(self) -> None:
        self._saved: int | None = None
        if self._sink is None:
            return
        try:
            self._saved = os.dup(2)
            os.dup2(self._sink, 2)
        except OSError:
            self._saved = None

    def __exit__(self, *exc: object) -> None:
        if self._saved is None or self._sink is None:
            return
        os.dup2(self._saved, 2)
        os.close(self._saved)
        size = os.lseek(self._sink, 0, os.SEEK_END)
        if size:
            os.lseek(self._sink, 0, os.SEEK_SET)
            data = os.read(self._sink, size)
            self.lines += data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
            os.ftruncate(self._sink, 0)
            os.lseek(self._sink, 0, os.SEEK_SET)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file, self._sink = None, None


class AudioFile:
    """An open audio file, decoded on demand into 16 kHz mono blocks (see the module docstring).

    ``rate``, ``channels`` and ``frames`` are the file's own (``frames`` as the header says);
    ``samples`` counts the output samples ``blocks`` produced so far.
    """

    def __init__(
        self, path: str | Path, target_rate: int = TARGET_RATE, block_samples: int = BLOCK_SAMPLES
    ) -> None:
        if block_samples < 1:
            raise ValueError(f"block_samples must be >= 1; got {block_samples}")
        self.path = check_audio_path(path)
        self.target_rate = target_rate
        self.block_samples = block_samples
        self.samples = 0
        self._stderr = _StderrCapture()
        try:
            with self._stderr:
                self._sf = sf.SoundFile(str(self.path))
        except (sf.LibsndfileError, RuntimeError, TypeError) as exc:
            self._stderr.close()
            code = getattr(exc, "code", None)
            detail = (
                "not a recognised audio format"
                if code in _UNRECOGNISED
                else " ".join(str(getattr(exc, "error_string", "") or exc).split()) or type(exc).__name__
            )
            raise AudioFileError(f"cannot decode {self.path}: {detail} ({READABLE})") from None
        except OSError as exc:
            self._stderr.close()
            raise AudioFileError(f"cannot read {self.path}: {exc.strerror or exc}") from None
        self.rate, self.channels = int(self._sf.samplerate), int(self._sf.channels)
        self.frames = int(self._sf.frames)
        if not MIN_RATE <= self.rate <= MAX_RATE:
            self.close()
            raise AudioFileError(
                f"{self.path}: sample rate {self.rate} Hz is outside {MIN_RATE}..{MAX_RATE} Hz "
                "(a damaged header?)"
            )
        if self.channels < 1 or self.frames == 0:
            self.close()
            raise AudioFileError(f"{self.path} contains no audio samples")

    @property
    def decoder_messages(self) -> int:
        """Lines the decoder libraries wrote to stderr so far (reports on damaged data)."""
        return self._stderr.lines

    def __enter__(self) -> AudioFile:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self._sf.close()
        self._stderr.close()

    def _input_frames(self) -> int:
        """Frames per read: at most ``block_samples`` of output and ``MAX_INPUT_SAMPLES`` values."""
        for_block = self.block_samples * self.rate // self.target_rate
        return max(1, min(for_block, MAX_INPUT_SAMPLES // self.channels))

    def _chunks(self) -> Iterator[np.ndarray]:
        """Mono float32 at the file's rate, one read at a time; the resampler's input."""
        n = self._input_frames()
        while True:
            try:
                with self._stderr:
                    data = self._sf.read(n, dtype="float32", always_2d=True)
            except (sf.LibsndfileError, RuntimeError) as exc:
                detail = " ".join(str(exc).split()) or type(exc).__name__
                raise AudioFileError(f"cannot decode {self.path}: {detail}") from None
            if data.shape[0] == 0:
                return
            pcm = to_mono(data)
            if not np.isfinite(pcm).all():
                raise AudioFileError(f"{self.path} contains NaN or infinite samples")
            yield pcm

    def blocks(self) -> Iterator[np.ndarray]:
        """The whole file as 1-D float32 blocks of at most ``block_samples`` at ``target_rate``.

        Raises ``AudioFileError`` mid-way if the file turns out damaged, or at the end if it held
        no samples at all."""
        resampler = None
        if self.rate != self.target_rate:
            resampler = soxr.ResampleStream(self.rate, self.target_rate, 1, dtype="float32", quality="HQ")
        for chunk in self._chunks():
            out = chunk if resampler is None else resampler.resample_chunk(chunk)
            yield from self._split(out)
        if resampler is not None:
            yield from self._split(resampler.resample_chunk(np.zeros(0, np.float32), last=True))
        if self.samples == 0:
            raise AudioFileError(f"{self.path} contains no audio samples")

    def _split(self, out: np.ndarray) -> Iterator[np.ndarray]:
        for start in range(0, out.size, self.block_samples):
            block = np.ascontiguousarray(out[start : start + self.block_samples], dtype=np.float32)
            self.samples += block.size
            yield block


def open_audio(
    path: str | Path, target_rate: int = TARGET_RATE, block_samples: int = BLOCK_SAMPLES
) -> AudioFile:
    """``path`` opened for block-wise decoding; ``AudioFileError`` if it cannot be used."""
    return AudioFile(path, target_rate, block_samples)


def load_audio(path: str | Path, target_rate: int = TARGET_RATE) -> np.ndarray:
    """Decode ``path`` whole to 1-D float32 mono PCM at ``target_rate`` Hz (16 kHz by default).

    For short clips; long files should go through ``open_audio(...).blocks()``."""
    with open_audio(path, target_rate) as audio:
        blocks = list(audio.blocks())
    return np.concatenate(blocks)
