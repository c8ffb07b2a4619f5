"""Connected-speech utterances for the demo model (tools/demo_sentences.py)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from tests.tools.espeak_marker import needs_espeak
from tools.demo_data import HELDOUT_VOICES, SAMPLE_RATE, stream_targets, voices
from tools.demo_sentences import (
    MAX_SENTENCE_WORDS,
    SentenceSource,
    Voice,
    heldout_sentence,
    heldout_sentence_words,
    sentence_utterance,
    word_spans,
)
from tools.espeak_events import EspeakPool

pytestmark = needs_espeak


@pytest.fixture(scope="module")
def pool() -> Iterator[EspeakPool]:
    with EspeakPool() as p:
        yield p


def _rms_db(x: np.ndarray) -> float:
    return float(20 * np.log10(np.sqrt(np.mean(x.astype(np.float64) ** 2)) + 1e-12))


def test_spans_follow_the_word_events_and_hold_the_words(pool: EspeakPool) -> None:
    words = ["hello", "world", "one", "two", "three"]
    spoken = pool.sentence(words, "en-us", 175, 50, seps=[", ", " ", " ", " "])
    audio, spans = word_spans(spoken, words)
    assert [w.word for w in spans] == words
    starts = [round(ms * SAMPLE_RATE / 1000) for ms in spoken.word_starts_ms]
    for i, w in enumerate(spans):
        assert starts[i] <= w.start < w.end <= (starts[i + 1] if i + 1 < len(starts) else audio.size)
        assert _rms_db(audio[w.start : w.end]) > -40
    # The comma's pause is cut off "hello" (it is not part of the word) ...
    assert spans[1].start - spans[0].end > 0.05 * SAMPLE_RATE
    # ... while connected words run into each other: no gap of more than a trimming frame or two.
    assert spans[3].start - spans[2].end <= 160


def test_utterance_layout_and_targets(pool: EspeakPool) -> None:
    rng = np.random.default_rng(0)
    u = sentence_utterance(rng, pool, ["go", "left", "stop"], Voice("en", 175, 50), tempo=1.07)
    assert u.audio.dtype == np.float32 and np.all(np.abs(u.audio) <= 1.0)
    assert u.text == "go left stop"
    ends = [w.end for w in u.words]
    assert ends == sorted(ends) and u.words[0].start > 0.09 * SAMPLE_RATE  # a lead gap
    assert u.audio.size - u.words[-1].end >= 0.25 * SAMPLE_RATE  # a tail gap
    tgt = stream_targets(u, 6)
    assert len(tgt.word_slots) == 3 and tgt.eos_slot > max(tgt.word_slots)


def test_noise_off_keeps_digital_silence(pool: EspeakPool) -> None:
    rng = np.random.default_rng(1)
    u = sentence_utterance(rng, pool, ["yes"], Voice("en", 175, 50), noise=False)
    assert np.all(u.audio[: u.words[0].start // 2] == 0.0)


def test_heldout_sentences_are_reproducible_and_use_heldout_voices(pool: EspeakPool) -> None:
    # The held-out set is made in order by a fresh pool: then every run has the same samples.
    sets = []
    for _ in range(2):
        with EspeakPool() as fresh:
            sets.append([heldout_sentence(i, fresh) for i in range(4)])
    for a, b in zip(*sets, strict=True):
        np.testing.assert_array_equal(a.audio, b.audio)
        assert a.words == b.words
    # A warm pool speaks the same words with the same timing only to within espeak-ng's state.
    again = heldout_sentence(3, pool)
    assert again.text == sets[0][3].text == " ".join(heldout_sentence_words(3))
    assert abs(again.words[-1].end - sets[0][3].words[-1].end) < 0.02 * SAMPLE_RATE
    used = {heldout_sentence(i, pool).voice for i in range(3)}
    assert used == set(HELDOUT_VOICES) and not used & set(voices("train"))
    assert all(3 <= len(heldout_sentence_words(i)) <= 10 for i in range(50))


def test_training_source_never_speaks_an_excluded_sequence(pool: EspeakPool) -> None:
    words = ("one", "two")
    exclude = {(a, b) for a in ("one", "two", "three") for b in ("one", "two", "three")} - {words}
    src = SentenceSource([Voice("en-us", 175, 50)], pool, exclude)
    rng = np.random.default_rng(3)
    seen = [src.utterance(rng, 2).text for _ in range(40)]
    assert all(tuple(t.split()) not in exclude for t in seen)
    batch = src.batch(np.random.default_rng(4), 3)
    assert len({len(u.words) for u in batch}) == 1 and 1 <= len(batch[0].words) <= MAX_SENTENCE_WORDS
    with pytest.raises(ValueError, match="n_words"):
        src.utterance(rng, 0)


def test_merged_pairs_are_exactly_the_pairs_espeak_reads_as_one_word(pool: EspeakPool) -> None:
    from tools.demo_sentences import MERGED_PAIRS
    from tools.demo_vocab import DEMO_WORDS
    from tools.espeak_events import EspeakError

    merged = set()
    for a in DEMO_WORDS:
        for b in DEMO_WORDS:
            try:
                pool.sentence([a, b], "en", 175, 50)
            except EspeakError:
                merged.add((a, b))
    assert merged == set(MERGED_PAIRS)
    # Where such a pair meets, the separator keeps espeak-ng reading two words.
    from tools.demo_sentences import draw_separators

    words = ["yes", "no", "one", "go"]
    for seed in range(20):
        seps = draw_separators(np.random.default_rng(seed), words)
        assert seps[1] != " "
        assert len(pool.sentence(words, "en-us", 175, 50, seps=seps).word_starts_ms) == 4
