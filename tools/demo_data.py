"""Synthetic training and evaluation data for the demo model (issue 5): espeak-ng utterances of
the demo words with exact word timings, and their streaming-layout targets (dev-only; needs
espeak-ng, numpy, soundfile, soxr; no torch).

Usage (scripts under tools/ put the repository root on ``sys.path`` first)::

    from tools.demo_data import make_utterance, stream_targets, teacher_forcing
    utt = make_utterance(seed=7, split="train")     # 16 kHz mono float32 + word spans
    tgt = stream_targets(utt, delay_tokens=6)        # one id per 80 ms slot
    input_ids, labels = teacher_forcing(tgt)         # one entry per padded audio token

Utterances
----------
Each word is synthesized on its own (``espeak-ng --stdout -v VOICE -s SPEED -p PITCH``),
resampled to 16 kHz, trimmed to where its 5 ms frame RMS is within ``TRIM_DB`` of its loudest
frame, scaled by its own gain and placed after a random gap; the utterance gets a random overall
gain and white noise (never digital silence). ``WordSpan.start``/``end`` are the exact sample
range ``[start, end)`` of the trimmed word inside ``Utterance.audio``. Voices are an espeak-ng
accent plus a variant (``en+f3``); the held-out voices use variants and an accent that no
training voice uses. Held-out utterances draw from a random stream separate from training
(same seed, other split: other words), but short sequences can repeat by chance; an evaluation
that needs strictly unseen sequences must filter them against the training set.

Alignment convention (the streaming layout)
-------------------------------------------
Audio is cut into 80 ms slots of 1280 samples: slot ``j`` is real audio time ``j * 80 ms``. As in
the reference (mistral-common offline padding) and our engine (engine/src/stream.cpp), the real
audio is zero-padded to a multiple of 1280 samples (``n_slots`` real slots), 32 silent tokens go
on the left and ``d + 1 + 10`` on the right, d = ``delay_tokens`` (``delay_ms / 80``), so the
decoder sees ``n_audio = 32 + n_slots + d + 11`` audio tokens. Decoder position ``p`` adds audio
token ``p`` to its input embedding; the prompt is ``[BOS] + [STREAMING_PAD] * (32 + d)`` and the
output at position ``p`` is the token of slot ``j = p - 32 - d``. So the token of slot ``j`` is
emitted once the decoder has seen audio up to ``(j + d + 1) * 80 ms``, and is timestamped
``j * 80 ms`` by the engine.

Targets: a word whose trimmed audio ends at sample ``end`` (exclusive) goes to the first slot at
or after its end, ``j = ceil(end / 1280)`` (the slot whose start time is ``>= end``); so it is
emitted after at least ``(d + 1) * 80 ms`` of audio past the word's end. If that slot is taken,
the word moves to the next free slot and is recorded in ``StreamTargets.pushed``. Every other
slot is [STREAMING_PAD]. EOS goes to the first free slot at or after ``n_slots`` (the first right
pad slot). The reference generates slots ``0 .. n_slots + 9`` and stops at EOS, so loss belongs
on slots ``0 .. eos_slot``; ``teacher_forcing`` masks the rest with ``IGNORE_INDEX``.
"""

from __future__ import annotations

import functools
import io
import shutil
import subprocess
from dataclasses import dataclass
from typing import Literal

import numpy as np
import soundfile as sf
import soxr

from tools.demo_vocab import BOS_ID, DEMO_WORDS, EOS_ID, STREAMING_PAD_ID, word_token_id

SAMPLE_RATE = 16000
SAMPLES_PER_TOKEN = 1280  # 80 ms
LEFT_PAD_TOKENS = 32
RIGHT_PAD_EXTRA_TOKENS = 10
IGNORE_INDEX = -100

TRIM_FRAME = 80  # 5 ms energy frames for trimming a word's leading/trailing silence
TRIM_DB = -45.0  # a frame is speech when its RMS is within this many dB of the word's loudest frame

# Training voices: every accent with every variant ("" is the accent's default voice). British
# English is "en", not "en-gb": espeak-ng 1.51 silently ignores any "+variant" after "en-gb", so
# "en-gb+f3" is plain en-gb (tests/tools/test_demo_data.py checks that every voice here is distinct).
# The variants are espeak-ng's human-sounding ones (no whisper, robot or "fast" voices); "caleb"
# is left out because it sounds exactly like "klatt".
TRAIN_ACCENTS: tuple[str, ...] = (
    "en-us", "en", "en-gb-x-rp", "en-gb-scotland", "en-029", "en-gb-x-gbclan", "en-us-nyc",
)  # fmt: skip
TRAIN_VARIANTS: tuple[str, ...] = (
    "", "m1", "m2", "m3", "m4", "m5", "m6", "m8", "f1", "f2", "f3",
    "Alex", "Alicia", "Andrea", "Andy", "Annie", "Denis", "Gene", "Hugo", "Jacky", "Lee", "Michael",
    "Mike", "adam", "aunty", "belinda", "benjamin", "boris", "david", "ed", "edward", "grandma",
    "grandpa", "iven", "iven2", "john", "kaukovalta", "klatt", "klatt2", "klatt3", "linda", "max",
    "michel", "norbert", "paul", "quincy", "rob", "robert", "steph", "travis", "victor", "zac",
)  # fmt: skip
# Held out for evaluation: variants m7, f4, f5 and the West Midlands accent never occur in training.
HELDOUT_VOICES: tuple[str, ...] = ("en-us+m7", "en+f5", "en-gb-x-gbcwmd+f4")

SPEED_WPM = (130, 210)  # espeak-ng -s range, words per minute (inclusive)
PITCH = (25, 75)  # espeak-ng -p range, 0..99 (inclusive)
LEAD_GAP_S = (0.10, 0.60)
WORD_GAP_S = (0.03, 0.45)
TAIL_GAP_S = (0.25, 0.80)  # >= 2 slots, so a final word's slot stays before the first pad slot
WORD_GAIN_DB = (-6.0, 0.0)
PEAK = (0.15, 0.9)  # utterance peak amplitude after the overall gain
SNR_DB = (25.0, 50.0)  # speech RMS (over the word spans) to white-noise RMS, in dB
NOISE_FLOOR = 1e-4  # noise RMS never below this: no stretch is digital silence

Split = Literal["train", "heldout"]


@dataclass(frozen=True)
class WordSpan:
    """One word inside an utterance: samples ``[start, end)`` at 16 kHz."""

    word: str
    start: int
    end: int


@dataclass(frozen=True)
class Utterance:
    """A synthesized utterance: float32 mono 16 kHz audio and its words in order."""

    audio: np.ndarray
    words: tuple[WordSpan, ...]
    voice: str
    speed: int
    pitch: int

    @property
    def text(self) -> str:
        """The transcript the model should produce (lower case, single spaces)."""
        return " ".join(w.word for w in self.words)


@dataclass(frozen=True)
class StreamTargets:
    """Per-slot targets of one utterance at one delay (see the module docstring)."""

    delay_tokens: int
    n_slots: int  # real 80 ms slots: ceil(n_samples / 1280)
    slot_ids: np.ndarray  # int64 [n_slots + d + 11]: target token of each real and right-pad slot
    word_slots: tuple[int, ...]  # slot of each word's token, in word order
    pushed: tuple[int, ...]  # indexes of words moved past ceil(end / 1280) by a collision
    eos_slot: int

    @property
    def n_audio_tokens(self) -> int:
        """Audio tokens the model sees (left pad + real + right pad) = decoder positions."""
        return LEFT_PAD_TOKENS + len(self.slot_ids)


def voices(split: Split) -> tuple[str, ...]:
    """The espeak-ng voices of a split ("train" or "heldout"); ValueError otherwise."""
    if split == "train":
        return tuple(a + (f"+{v}" if v else "") for a in TRAIN_ACCENTS for v in TRAIN_VARIANTS)
    if split == "heldout":
        return HELDOUT_VOICES
    raise ValueError(f"split must be 'train' or 'heldout'; got {split!r}")


def espeak_available() -> bool:
    """Whether the espeak-ng executable is on PATH."""
    return shutil.which("espeak-ng") is not None


def trim_silence(audio: np.ndarray, threshold_db: float = TRIM_DB) -> np.ndarray:
    """Cut leading/trailing 5 ms frames whose RMS is more than ``-threshold_db`` dB below the
    loudest frame; ValueError if the audio has no energy at all."""
    n = audio.size // TRIM_FRAME
    if n == 0:
        raise ValueError(f"audio too short to trim: {audio.size} samples")
    rms = np.sqrt(np.mean(audio[: n * TRIM_FRAME].reshape(n, TRIM_FRAME).astype(np.float64) ** 2, axis=1))
    peak = float(rms.max())
    if peak <= 0.0:
        raise ValueError("audio is digital silence; nothing to trim to")
    loud = np.flatnonzero(rms >= peak * 10.0 ** (threshold_db / 20.0))
    return audio[loud[0] * TRIM_FRAME : (loud[-1] + 1) * TRIM_FRAME]


@functools.lru_cache(maxsize=4096)
def _synthesize_cached(word: str, voice: str, speed: int, pitch: int, data_path: str) -> np.ndarray:
    cmd = ["espeak-ng", "--stdout", "-v", voice, "-s", str(speed), "-p", str(pitch), word]
    if data_path:
        cmd.insert(1, f"--path={data_path}")
    try:
        wav = subprocess.run(cmd, check=True, capture_output=True).stdout
    except FileNotFoundError as e:
        raise RuntimeError("espeak-ng is not installed (apt-get install espeak-ng)") from e
    except subprocess.CalledProcessError as e:
        err = e.stderr.decode(errors="replace").strip()
        raise RuntimeError(f"espeak-ng failed for voice {voice!r}: {err}") from e
    audio, rate = sf.read(io.BytesIO(wav), dtype="float32")
    if audio.ndim > 1:
        audio = audio.mean(axis=1)
    audio = soxr.resample(audio, rate, SAMPLE_RATE).astype(np.float32)
    out = trim_silence(audio)
    out.flags.writeable = False
    return out


def synthesize_word(word: str, voice: str, speed: int, pitch: int, data_path: str = "") -> np.ndarray:
    """One demo word spoken by espeak-ng: float32 16 kHz, leading/trailing silence trimmed.

    ``speed`` is words per minute (espeak-ng -s), ``pitch`` 0..99 (-p); ``data_path`` is an
    ``espeak-ng --path`` (a data copy with random variants, ``tools.demo_voices``), "" for the
    system's. Results are cached.
    """
    if word not in DEMO_WORDS:
        raise ValueError(f"{word!r} is not a demo word; expected one of: {' '.join(DEMO_WORDS)}")
    return _synthesize_cached(word, voice, int(speed), int(pitch), data_path).copy()


def _split_rng(seed: int, split: Split) -> np.random.Generator:
    if seed < 0:
        raise ValueError(f"seed must be >= 0; got {seed}")
    return np.random.default_rng([seed, 0 if split == "train" else 1])


def _draw_words(seed: int, split: Split, n_words: int | None) -> tuple[np.random.Generator, list[str]]:
    voices(split)  # validates the split
    if n_words is not None and not 1 <= n_words <= 8:
        raise ValueError(f"n_words must be 1..8; got {n_words}")
    rng = _split_rng(seed, split)
    count = int(rng.integers(1, 9)) if n_words is None else n_words
    return rng, [str(w) for w in rng.choice(DEMO_WORDS, size=count)]


def utterance_words(seed: int, split: Split = "train", n_words: int | None = None) -> tuple[str, ...]:
    """The words ``make_utterance`` would speak for these arguments, without synthesizing them."""
    return tuple(_draw_words(seed, split, n_words)[1])


def heldout_words(index: int) -> tuple[str, ...]:
    """Words of held-out evaluation utterance ``index`` (3..8 words; see ``heldout_utterance``)."""
    return utterance_words(index, "heldout", n_words=3 + index % 6)


def heldout_utterance(index: int) -> Utterance:
    """Held-out evaluation utterance ``index``: held-out voices, 3..8 words (so that excluding
    these exact sequences from training removes only them; training never speaks one)."""
    return make_utterance(index, "heldout", n_words=3 + index % 6)


def make_utterance(seed: int, split: Split = "train", n_words: int | None = None) -> Utterance:
    """A random utterance of 1..8 demo words (``n_words`` fixes the count), fully determined by
    ``seed`` and ``split``; see the module docstring for what is randomised."""
    rng, words = _draw_words(seed, split, n_words)
    voice = str(rng.choice(voices(split)))
    speed = int(rng.integers(SPEED_WPM[0], SPEED_WPM[1] + 1))
    pitch = int(rng.integers(PITCH[0], PITCH[1] + 1))

    audios = [synthesize_word(w, voice, speed, pitch) for w in words]
    audio, spans = assemble(rng, words, audios)
    return Utterance(audio=audio, words=spans, voice=voice, speed=speed, pitch=pitch)


def assemble(
    rng: np.random.Generator, words: list[str], audios: list[np.ndarray], long_gap_s: float = 0.0
) -> tuple[np.ndarray, tuple[WordSpan, ...]]:
    """Place trimmed word recordings after random gaps, with per-word and overall gain and
    white noise (see the module docstring); ``long_gap_s`` > 0 inserts one pause of that length
    before a random word after the first. Returns the audio and the exact word spans."""
    long_at = int(rng.integers(1, len(words))) if long_gap_s > 0 and len(words) > 1 else -1

    def gap(bounds: tuple[float, float]) -> int:
        return int(rng.uniform(*bounds) * SAMPLE_RATE)

    pieces: list[np.ndarray] = []
    spans: list[WordSpan] = []
    pos = gap(LEAD_GAP_S)
    pieces.append(np.zeros(pos, dtype=np.float32))
    for i, (word, w) in enumerate(zip(words, audios, strict=True)):
        if i:
            g = gap(WORD_GAP_S) + (int(long_gap_s * SAMPLE_RATE) if i == long_at else 0)
            pieces.append(np.zeros(g, dtype=np.float32))
            pos += g
        w = w / max(float(np.abs(w).max()), 1e-9) * 10.0 ** (rng.uniform(*WORD_GAIN_DB) / 20.0)
        pieces.append(w.astype(np.float32))
        spans.append(WordSpan(word, pos, pos + w.size))
        pos += w.size
    pieces.append(np.zeros(gap(TAIL_GAP_S), dtype=np.float32))
    return finish(rng, np.concatenate(pieces), spans), tuple(spans)


def finish(rng: np.random.Generator, audio: np.ndarray, spans: list[WordSpan] | tuple[WordSpan, ...],
           noise: bool = True) -> np.ndarray:  # fmt: skip
    """An utterance's overall level (a random peak in ``PEAK``) and white noise at a random SNR
    over its word spans (``SNR_DB``, never below ``NOISE_FLOOR``); ``noise=False`` keeps its
    silences digital (what a PulseAudio monitor gives between sounds)."""
    peak = rng.uniform(*PEAK)
    audio = audio * (peak / max(float(np.abs(audio).max()), 1e-9))
    speech = np.concatenate([audio[w.start : w.end] for w in spans]) if spans else audio
    speech_rms = float(np.sqrt(np.mean(speech**2)))
    noise_rms = max(speech_rms * 10.0 ** (-rng.uniform(*SNR_DB) / 20.0), NOISE_FLOOR)
    if noise:
        audio += (noise_rms * rng.standard_normal(audio.size)).astype(np.float32)
    return np.clip(audio, -1.0, 1.0).astype(np.float32)


def stream_targets(utt: Utterance, delay_tokens: int) -> StreamTargets:
    """The streaming-layout target of every 80 ms slot for delay ``delay_tokens`` (0..30; the
    app offers 1..30, 0 is training's warm-up: each word on the first position that sees its end)."""
    if not 0 <= delay_tokens <= 30:
        raise ValueError(f"delay_tokens must be 0..30 (0..2400 ms); got {delay_tokens}")
    n_slots = -(-utt.audio.size // SAMPLES_PER_TOKEN)
    total = n_slots + delay_tokens + 1 + RIGHT_PAD_EXTRA_TOKENS
    last_generated = n_slots + RIGHT_PAD_EXTRA_TOKENS - 1  # reference: positions up to n_audio - 2
    ids = np.full(total, STREAMING_PAD_ID, dtype=np.int64)
    taken = np.zeros(total, dtype=bool)
    word_slots: list[int] = []
    pushed: list[int] = []
    prev_end = 0
    for i, span in enumerate(utt.words):
        if not 0 <= prev_end <= span.start < span.end <= utt.audio.size:
            where = f"{span.start}..{span.end}"
            raise ValueError(f"word {i} ({span.word!r}) span {where} is out of order or out of range")
        prev_end = span.end
        natural = -(-span.end // SAMPLES_PER_TOKEN)
        slot = natural
        while slot < total and taken[slot]:
            slot += 1
        if slot > last_generated:
            raise ValueError(f"word {i} ({span.word!r}) lands on slot {slot}, past the last generated slot")
        if slot != natural:
            pushed.append(i)
        ids[slot] = word_token_id(span.word)
        taken[slot] = True
        word_slots.append(slot)
    eos_slot = n_slots
    while taken[eos_slot]:
        eos_slot += 1
    if eos_slot > last_generated:
        raise ValueError(f"EOS lands on slot {eos_slot}, past the last generated slot {last_generated}")
    ids[eos_slot] = EOS_ID
    return StreamTargets(delay_tokens, n_slots, ids, tuple(word_slots), tuple(pushed), eos_slot)


def teacher_forcing(tgt: StreamTargets) -> tuple[np.ndarray, np.ndarray]:
    """Decoder ``input_ids`` and ``labels`` (int64, one per padded audio token, ``n_audio_tokens``).

    Inputs: BOS, then [STREAMING_PAD] up to position 32 + d, then the previous slot's target.
    Labels: slot ``p - 32 - d`` target at position ``p`` for slots ``0 .. eos_slot``, else
    ``IGNORE_INDEX``. Position ``p`` is fused with audio token ``p`` of the padded audio.
    """
    d = tgt.delay_tokens
    prompt = LEFT_PAD_TOKENS + d + 1
    n = tgt.n_audio_tokens
    input_ids = np.full(n, STREAMING_PAD_ID, dtype=np.int64)
    input_ids[0] = BOS_ID
    input_ids[prompt:] = tgt.slot_ids[: n - prompt]
    labels = np.full(n, IGNORE_INDEX, dtype=np.int64)
    first = prompt - 1
    labels[first : first + tgt.eos_slot + 1] = tgt.slot_ids[: tgt.eos_slot + 1]
    return input_ids, labels


def pad_audio(audio: np.ndarray, delay_tokens: int) -> np.ndarray:
    """The reference's offline padding: zeros to a multiple of 1280 samples, 32 tokens of zeros
    on the left and ``delay_tokens + 1 + 10`` on the right (float32)."""
    if audio.ndim != 1:
        raise ValueError(f"audio must be mono (1-D); got shape {audio.shape}")
    tail = (-audio.size) % SAMPLES_PER_TOKEN + (delay_tokens + 1 + RIGHT_PAD_EXTRA_TOKENS) * SAMPLES_PER_TOKEN
    return np.pad(audio.astype(np.float32), (LEFT_PAD_TOKENS * SAMPLES_PER_TOKEN, tail))
