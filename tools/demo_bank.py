"""A bank of espeak-ng word recordings for training the demo model fast (dev-only; no torch).

Synthesizing every training word afresh costs ~10 ms of espeak-ng per word, too slow for tens of
thousands of utterances on two cores. The bank synthesizes each training voice at ``per_voice``
random (speed, pitch) settings, plus ``random_voices`` speakers whose espeak-ng variant is drawn
at random (``tools.demo_voices``: the many voices between the named variants), every demo word
at each, once; training utterances then draw a
speaker (voice + setting) and words from it, stretch the whole utterance by a random tempo factor
(resampling, so tempo and pitch change together) and assemble them with ``demo_data.assemble``
(random gaps, gains, noise). Word spans stay exact because each word is stretched on its own.

    bank = WordBank.build(seed=0, per_voice=2, cache_dir=Path("/tmp/demo-bank"), random_voices=1024)
    utt = bank.utterance(np.random.default_rng(1))
"""

from __future__ import annotations

import hashlib
import tempfile
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soxr

from tools.demo_data import (
    PITCH,
    SAMPLE_RATE,
    SPEED_WPM,
    TRAIN_ACCENTS,
    Utterance,
    assemble,
    synthesize_word,
    voices,
)
from tools.demo_vocab import DEMO_WORDS
from tools.demo_voices import RANDOM_PREFIX, install_variants, random_variant

MAX_WORDS = 16  # longer than held-out (3..8): the fixed padding (see ``batch``) costs less per word
EMPTY_P = 0.03  # utterances with no word at all (noise only; the target is EOS alone)
LONG_GAP_P = 0.10  # utterances with one pause of LONG_GAP_S inside
LONG_GAP_S = (0.8, 3.0)
TEMPO = (0.88, 1.12)  # resampling factor for the whole utterance


@dataclass(frozen=True)
class Speaker:
    voice: str
    speed: int
    pitch: int
    data_path: str = ""  # espeak-ng --path holding the voice's random variant; "" = system data


def _synthesize_all(speaker: Speaker) -> list[np.ndarray]:
    s = speaker
    return [synthesize_word(w, s.voice, s.speed, s.pitch, s.data_path) for w in DEMO_WORDS]


class WordBank:
    """Every demo word recorded by a set of training speakers."""

    def __init__(self, speakers: list[Speaker], recordings: list[list[np.ndarray]]) -> None:
        if len(speakers) != len(recordings) or not speakers:
            raise ValueError("a bank needs one list of recordings per speaker")
        self.speakers = speakers
        self.recordings = recordings
        self.exclude: set[tuple[str, ...]] = set()  # word sequences never to produce (held-out ones)

    @staticmethod
    def speakers_for(seed: int, per_voice: int) -> list[Speaker]:
        """The bank's speakers: every training voice at ``per_voice`` seeded (speed, pitch) draws."""
        rng = np.random.default_rng([seed, 2])
        out = []
        for voice in voices("train"):
            for _ in range(per_voice):
                speed = int(rng.integers(SPEED_WPM[0], SPEED_WPM[1] + 1))
                pitch = int(rng.integers(PITCH[0], PITCH[1] + 1))
                out.append(Speaker(voice, speed, pitch))
        return out

    @staticmethod
    def random_speakers(seed: int, count: int, variants_dir: Path) -> list[Speaker]:
        """``count`` speakers with random espeak-ng variants (``tools.demo_voices``), each on a
        random training accent at one seeded (speed, pitch); the variants are installed in a
        private espeak-ng data copy under ``variants_dir``."""
        rng = np.random.default_rng([seed, 4])
        names = [f"{RANDOM_PREFIX}{i:04d}" for i in range(count)]
        paths = install_variants({n: random_variant(rng, n) for n in names}, variants_dir)
        out = []
        for name in names:
            accent = TRAIN_ACCENTS[int(rng.integers(len(TRAIN_ACCENTS)))]
            speed = int(rng.integers(SPEED_WPM[0], SPEED_WPM[1] + 1))
            pitch = int(rng.integers(PITCH[0], PITCH[1] + 1))
            out.append(Speaker(f"{accent}+{name}", speed, pitch, paths[name]))
        return out

    @classmethod
    def build(
        cls,
        seed: int,
        per_voice: int,
        cache_dir: Path | None = None,
        workers: int = 2,
        random_voices: int = 0,
    ) -> WordBank:
        """Synthesize (or load from ``cache_dir``) the bank for ``seed``: every named training
        voice at ``per_voice`` settings plus ``random_voices`` random-variant speakers."""
        speakers = cls.speakers_for(seed, per_voice)
        if random_voices:
            root = (cache_dir or Path(tempfile.gettempdir()) / "captionist-demo-bank") / "espeak"
            speakers += cls.random_speakers(seed, random_voices, root)
        # The key names each random variant's install directory (a hash of its variant files).
        ident = [(s.voice, s.speed, s.pitch, Path(s.data_path).name) for s in speakers]
        key = hashlib.sha256(repr((ident, DEMO_WORDS)).encode()).hexdigest()[:16]
        cache = cache_dir / f"bank-{key}.npz" if cache_dir else None
        if cache is not None and cache.exists():
            with np.load(cache) as z:
                recs = [[z[f"s{i}_w{j}"] for j in range(len(DEMO_WORDS))] for i in range(len(speakers))]
            return cls(speakers, recs)
        with ProcessPoolExecutor(max_workers=workers) as pool:
            recs = list(pool.map(_synthesize_all, speakers, chunksize=8))
        if cache is not None:
            cache.parent.mkdir(parents=True, exist_ok=True)
            tmp = cache.with_suffix(".tmp.npz")
            arrays = {f"s{i}_w{j}": a for i, r in enumerate(recs) for j, a in enumerate(r)}
            np.savez(tmp, **arrays)
            tmp.replace(cache)
        return cls(speakers, recs)

    def batch(self, rng: np.random.Generator, size: int) -> list[Utterance]:
        """``size`` training utterances with one random word count (1..MAX_WORDS) between them,
        except the EMPTY_P share that has none. Every utterance costs the model 32 + d + 11 tokens
        of padding (the streaming layout) and a batch is padded to its longest utterance, so
        batches of equally long utterances spend most of their compute on speech."""
        count = int(rng.integers(1, MAX_WORDS + 1))
        return [self.utterance(rng, 0 if rng.random() < EMPTY_P else count) for _ in range(size)]

    def utterance(self, rng: np.random.Generator, n_words: int | None = None) -> Utterance:
        """A random training utterance of ``n_words`` words (default: 0..MAX_WORDS at random) from
        one speaker of the bank, never one of the word sequences in ``exclude``."""
        s = int(rng.integers(len(self.speakers)))
        speaker = self.speakers[s]
        if n_words is None:
            count = 0 if rng.random() < EMPTY_P else int(rng.integers(1, MAX_WORDS + 1))
        elif 0 <= n_words <= MAX_WORDS:
            count = n_words
        else:
            raise ValueError(f"n_words must be 0..{MAX_WORDS}; got {n_words}")
        idx = [int(i) for i in rng.integers(len(DEMO_WORDS), size=count)]
        while tuple(DEMO_WORDS[i] for i in idx) in self.exclude:
            idx = [int(i) for i in rng.integers(len(DEMO_WORDS), size=count)]
        tempo = float(rng.uniform(*TEMPO))
        audios = []
        for i in idx:
            rec = self.recordings[s][i]
            audios.append(soxr.resample(rec, SAMPLE_RATE * tempo, SAMPLE_RATE).astype(np.float32))
        long_gap = float(rng.uniform(*LONG_GAP_S)) if rng.random() < LONG_GAP_P else 0.0
        words = [DEMO_WORDS[i] for i in idx]
        audio, spans = assemble(rng, words, audios, long_gap_s=long_gap)
        sp = speaker
        return Utterance(audio=audio, words=spans, voice=sp.voice, speed=sp.speed, pitch=sp.pitch)
