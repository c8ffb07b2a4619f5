"""Connected speech for the demo model (issue 15): whole espeak-ng sentences of demo words, with
each word's exact span from espeak-ng's own word events (dev-only; needs libespeak-ng; no torch).

``tools.demo_data`` speaks every word on its own and joins the recordings with gaps; people (and
espeak-ng reading a sentence) run words together, with coarticulation and no silence between
them, and pause at commas. Here a sentence is synthesized as one text (``tools.espeak_events``)
and cut into word spans with the alignment convention of ``tools.demo_data`` (its docstring):

* espeak-ng's WORD event gives the millisecond where each word's sound starts; word ``i``'s
  audio lies in ``[start_i, start_{i+1})`` (the last word's up to the end of the audio);
* inside that range, the span is trimmed like a single word (``demo_data.trim_silence``: 5 ms
  frames within ``TRIM_DB`` of the range's loudest), so a pause after a comma is not part of
  the word, and a word that runs into the next ends where the next begins.

Utterances then get a lead and a tail gap, a level and noise (``demo_data.finish``); the tokens'
slots follow from the spans exactly as for word-by-word utterances (``stream_targets``)::

    with EspeakPool() as pool:
        utt = heldout_sentence(5, pool)                   # held-out voice and words, connected
        src = SentenceSource(speakers, pool); utts = src.batch(rng, 8)   # training
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import soxr

from tools.demo_data import (
    HELDOUT_VOICES,
    LEAD_GAP_S,
    SAMPLE_RATE,
    TAIL_GAP_S,
    TRIM_DB,
    TRIM_FRAME,
    Utterance,
    WordSpan,
    finish,
)
from tools.demo_vocab import DEMO_WORDS
from tools.espeak_events import EspeakError, EspeakPool, SpokenSentence

SENTENCE_SPEED_WPM = (130, 230)  # espeak-ng -s of training sentences (its default is 175)
HELDOUT_SPEED_WPM = (140, 210)
HELDOUT_PITCH = (30, 70)
COMMA_P = 0.10  # share of word boundaries spoken with a comma's pause
STOP_P = 0.03  # ... with a full stop's
WORD_GAP_P = 0.25  # share of training sentences with an extra espeak-ng word gap (-g)
WORD_GAP = (1, 15)  # its range, in espeak-ng's 10 ms units
NO_NOISE_P = 0.15  # training sentences left with digital silence between sounds
TEMPO = (0.9, 1.1)  # resampling factor of a training sentence (tempo and pitch together)
MAX_SENTENCE_WORDS = 14
# Word pairs espeak-ng reads as one dictionary entry ("no one" as "no-one"): one WORD event for
# both, so no span for the second. Where they meet, a comma separates them (checked against
# espeak-ng for every pair of demo words by tests/tools/test_demo_sentences.py).
MERGED_PAIRS = frozenset({("no", "one")})
HELDOUT_WORDS = (3, 10)
RETRIES = 10  # draws of a training sentence before giving up  # words per held-out sentence (inclusive)


@dataclass(frozen=True)
class Voice:
    """Who speaks: an espeak-ng voice at one (speed, pitch), in a data directory ("" = system)."""

    voice: str
    speed: int
    pitch: int
    data_path: str = ""


def word_spans(
    spoken: SpokenSentence, words: list[str] | tuple[str, ...]
) -> tuple[np.ndarray, tuple[WordSpan, ...]]:
    """The sentence at 16 kHz and each word's span in it (see the module docstring); EspeakError
    if a word's range holds no sound at all."""
    audio = soxr.resample(spoken.audio, spoken.rate, SAMPLE_RATE).astype(np.float32)
    starts = [min(audio.size, round(ms * SAMPLE_RATE / 1000)) for ms in spoken.word_starts_ms]
    bounds = starts[1:] + [audio.size]
    spans = []
    for word, lo, hi in zip(words, starts, bounds, strict=True):
        seg = audio[lo:hi]
        n = seg.size // TRIM_FRAME
        if n == 0:
            raise EspeakError(f"word {word!r} of {spoken.text!r} has no audio between {lo} and {hi}")
        rms = np.sqrt(np.mean(seg[: n * TRIM_FRAME].reshape(n, TRIM_FRAME).astype(np.float64) ** 2, axis=1))
        if float(rms.max()) <= 0.0:
            raise EspeakError(f"word {word!r} of {spoken.text!r} is silent")
        loud = np.flatnonzero(rms >= rms.max() * 10.0 ** (TRIM_DB / 20.0))
        spans.append(
            WordSpan(word, lo + int(loud[0]) * TRIM_FRAME, min(hi, lo + (int(loud[-1]) + 1) * TRIM_FRAME))
        )
    return audio, tuple(spans)


def draw_separators(rng: np.random.Generator, words: list[str] | tuple[str, ...]) -> list[str]:
    """What goes between the words: mostly a space, sometimes a comma or a full stop. Never a full
    stop after "no" (espeak-ng reads "no." as the abbreviation of "number"), and at least a comma
    inside a ``MERGED_PAIRS`` pair."""
    out = []
    for a, b in zip(words, words[1:], strict=False):
        r = rng.random()
        sep = ". " if r < STOP_P and a != "no" else ", " if r < STOP_P + COMMA_P else " "
        out.append(", " if sep == " " and (a, b) in MERGED_PAIRS else sep)
    return out


def sentence_utterance(
    rng: np.random.Generator,
    pool: EspeakPool,
    words: list[str] | tuple[str, ...],
    voice: Voice,
    seps: list[str] | None = None,
    word_gap: int = 0,
    tempo: float = 1.0,
    noise: bool = True,
) -> Utterance:
    """``words`` spoken by ``voice`` as one sentence, with gaps before and after, a level and
    noise; ``tempo`` > 1 speeds the whole recording up (resampling), spans follow."""
    spoken = pool.sentence(
        list(words), voice.voice, voice.speed, voice.pitch, seps, word_gap, voice.data_path
    )
    audio, spans = word_spans(spoken, words)
    if tempo != 1.0:
        before = audio.size
        audio = soxr.resample(audio, SAMPLE_RATE * tempo, SAMPLE_RATE).astype(np.float32)
        scale = audio.size / before
        # The same rounding for starts and ends keeps spans in order where one word ends as the next begins.
        spans = tuple(
            WordSpan(w.word, min(audio.size - 1, int(w.start * scale)), min(audio.size, int(w.end * scale)))
            for w in spans
        )
    lead = int(rng.uniform(*LEAD_GAP_S) * SAMPLE_RATE)
    tail = int(rng.uniform(*TAIL_GAP_S) * SAMPLE_RATE)
    padded = np.concatenate([np.zeros(lead, np.float32), audio, np.zeros(tail, np.float32)])
    spans = tuple(WordSpan(w.word, w.start + lead, w.end + lead) for w in spans)
    out = finish(rng, padded, spans, noise=noise)
    return Utterance(audio=out, words=spans, voice=voice.voice, speed=voice.speed, pitch=voice.pitch)


def heldout_sentence_words(index: int) -> tuple[str, ...]:
    """Words of held-out sentence ``index`` (3..10 of them), from a random stream of their own."""
    if index < 0:
        raise ValueError(f"index must be >= 0; got {index}")
    rng = np.random.default_rng([index, 5])
    count = HELDOUT_WORDS[0] + index % (HELDOUT_WORDS[1] - HELDOUT_WORDS[0] + 1)
    return tuple(str(w) for w in rng.choice(DEMO_WORDS, size=count))


def heldout_sentence(index: int, pool: EspeakPool) -> Utterance:
    """Held-out connected-speech utterance ``index``: a held-out voice (in turn), its words
    (``heldout_sentence_words``), connected (no word gap), a comma or stop now and then.

    The held-out set is sentences ``0 .. n-1`` made in that order by a fresh pool: espeak-ng's
    samples depend on what its process spoke before (``tools.espeak_events``), so that order is
    what makes them the same on every run (the words, voices and timings never depend on it)."""
    rng = np.random.default_rng([index, 6])
    words = heldout_sentence_words(index)
    voice = Voice(
        HELDOUT_VOICES[index % len(HELDOUT_VOICES)],
        int(rng.integers(HELDOUT_SPEED_WPM[0], HELDOUT_SPEED_WPM[1] + 1)),
        int(rng.integers(HELDOUT_PITCH[0], HELDOUT_PITCH[1] + 1)),
    )
    return sentence_utterance(rng, pool, words, voice, draw_separators(rng, words))


class SentenceSource:
    """Random training sentences from a set of voices, never one of ``exclude``'s word sequences."""

    def __init__(
        self, voices: list[Voice], pool: EspeakPool, exclude: set[tuple[str, ...]] | None = None
    ) -> None:
        if not voices:
            raise ValueError("a sentence source needs at least one voice")
        self.voices = voices
        self.pool = pool
        self.exclude = exclude if exclude is not None else set()
        self.failures: list[str] = []  # sentences drawn again (see ``utterance``)

    def utterance(self, rng: np.random.Generator, n_words: int) -> Utterance:
        if not 1 <= n_words <= MAX_SENTENCE_WORDS:
            raise ValueError(f"n_words must be 1..{MAX_SENTENCE_WORDS}; got {n_words}")
        # A sentence whose word events espeak-ng does not give one per word (an abbreviation or a
        # dictionary phrase not yet known here) is drawn again: training must never stop on one.
        for _ in range(RETRIES):
            base = self.voices[int(rng.integers(len(self.voices)))]
            speed = int(rng.integers(SENTENCE_SPEED_WPM[0], SENTENCE_SPEED_WPM[1] + 1))
            voice = Voice(base.voice, speed, base.pitch, base.data_path)
            words = tuple(str(w) for w in rng.choice(DEMO_WORDS, size=n_words))
            while words in self.exclude:
                words = tuple(str(w) for w in rng.choice(DEMO_WORDS, size=n_words))
            gap = int(rng.integers(WORD_GAP[0], WORD_GAP[1] + 1)) if rng.random() < WORD_GAP_P else 0
            seps = draw_separators(rng, words)
            tempo = float(rng.uniform(*TEMPO))
            noise = rng.random() >= NO_NOISE_P
            try:
                return sentence_utterance(rng, self.pool, words, voice, seps, gap, tempo, noise)
            except EspeakError as e:
                self.failures.append(str(e))
        raise EspeakError(f"{RETRIES} sentences in a row failed; the last: {self.failures[-1]}")

    def batch(self, rng: np.random.Generator, size: int) -> list[Utterance]:
        """``size`` sentences of one random word count (1..MAX_SENTENCE_WORDS)."""
        count = int(rng.integers(1, MAX_SENTENCE_WORDS + 1))
        return [self.utterance(rng, count) for _ in range(size)]
