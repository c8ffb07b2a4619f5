"""The demo model's training bank, held-out split and evaluation alignment (no espeak-ng needed:
the bank is built from synthetic recordings)."""

from __future__ import annotations

import numpy as np
import pytest

from tools.demo_bank import MAX_WORDS, Speaker, WordBank
from tools.demo_data import SAMPLE_RATE, heldout_words, stream_targets, utterance_words, voices
from tools.demo_vocab import DEMO_WORDS
from tools.eval_demo_model import align


def _bank(n_speakers: int = 3) -> WordBank:
    # Word i of speaker s is a tone of its own length, so spans can be checked against it.
    speakers = [Speaker("en-us", 150 + s, 50) for s in range(n_speakers)]
    recs = [
        [
            np.sin(np.arange(1600 + 160 * i) * (0.05 + 0.01 * s)).astype(np.float32)
            for i in range(len(DEMO_WORDS))
        ]
        for s in range(n_speakers)
    ]
    return WordBank(speakers, recs)


def test_bank_utterances_are_seeded_and_hold_their_words() -> None:
    bank = _bank()
    a, b = bank.utterance(np.random.default_rng(4)), bank.utterance(np.random.default_rng(4))
    assert a.text == b.text and np.array_equal(a.audio, b.audio)
    for seed in range(40):
        u = bank.utterance(np.random.default_rng(seed))
        assert len(u.words) <= MAX_WORDS
        assert u.audio.dtype == np.float32 and np.abs(u.audio).max() <= 1.0
        prev = 0
        for w in u.words:
            assert prev <= w.start < w.end <= u.audio.size
            # Tempo-stretched recording: within 12 % of the original length (1600 + 160 i samples).
            base = 1600 + 160 * DEMO_WORDS.index(w.word)
            assert 0.87 * base <= w.end - w.start <= 1.15 * base
            prev = w.end
        stream_targets(u, 6)  # every utterance has a valid streaming layout


def test_bank_never_speaks_an_excluded_sequence() -> None:
    bank = _bank()
    rng = np.random.default_rng(0)
    seen = [bank.utterance(rng) for _ in range(60)]
    one_word = {tuple(w.word for w in u.words) for u in seen if len(u.words) == 1}
    assert one_word
    bank.exclude = one_word
    rng = np.random.default_rng(0)
    for _ in range(200):
        assert tuple(w.word for w in bank.utterance(rng).words) not in one_word


def test_bank_batches_share_one_word_count() -> None:
    bank = _bank()
    counts = set()
    for seed in range(30):
        batch = bank.batch(np.random.default_rng(seed), 12)
        assert len(batch) == 12
        spoken = {len(u.words) for u in batch} - {0}
        assert len(spoken) <= 1  # one word count per batch (empty utterances aside)
        counts |= spoken
    assert len(counts) > 5 and max(counts) <= MAX_WORDS
    a = bank.batch(np.random.default_rng(3), 4)
    b = bank.batch(np.random.default_rng(3), 4)
    assert [u.text for u in a] == [u.text for u in b]
    with pytest.raises(ValueError, match="n_words"):
        bank.utterance(np.random.default_rng(0), MAX_WORDS + 1)


def test_bank_needs_one_recording_list_per_speaker() -> None:
    with pytest.raises(ValueError, match="one list of recordings per speaker"):
        WordBank([Speaker("en-us", 150, 50)], [])


def test_bank_speakers_are_training_voices_only() -> None:
    speakers = WordBank.speakers_for(seed=0, per_voice=2)
    assert len(speakers) == 2 * len(voices("train"))
    assert {s.voice for s in speakers} == set(voices("train"))
    assert not {s.voice for s in speakers} & set(voices("heldout"))


def test_heldout_words_match_the_utterances_without_synthesis() -> None:
    words = [heldout_words(i) for i in range(12)]
    assert all(3 <= len(w) <= 8 for w in words)
    assert words[5] == utterance_words(5, "heldout", n_words=3 + 5 % 6)
    assert len(set(words)) == len(words)
    assert SAMPLE_RATE == 16000


@pytest.mark.parametrize(
    ("ref", "hyp", "errors", "pairs"),
    [
        ("a b c", "a b c", 0, [(0, 0), (1, 1), (2, 2)]),
        ("a b c", "a c", 1, [(0, 0), (2, 1)]),
        ("a b c", "a x b c", 1, [(0, 0), (1, 2), (2, 3)]),
        ("a b c", "a x c", 1, [(0, 0), (2, 2)]),
        ("a b", "", 2, []),
        ("", "a", 1, []),
    ],
)
def test_align_counts_word_errors_and_matches(ref: str, hyp: str, errors: int, pairs: list) -> None:
    assert align(ref.split(), hyp.split()) == (errors, pairs)
