"""espeak-ng sentences with word timings from the library's own events (tools/espeak_events.py)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from tests.tools.espeak_marker import needs_espeak
from tools.demo_data import synthesize_word
from tools.espeak_events import EspeakError, EspeakPool

pytestmark = needs_espeak


@pytest.fixture(scope="module")
def pool() -> Iterator[EspeakPool]:
    with EspeakPool() as p:
        yield p


def _frame_db(audio: np.ndarray, rate: int, ms: int = 10) -> np.ndarray:
    n = rate * ms // 1000
    frames = audio[: audio.size // n * n].reshape(-1, n).astype(np.float64)
    return 20 * np.log10(np.sqrt(np.mean(frames**2, axis=1)) + 1e-9)


def test_one_start_per_word_in_order_inside_the_audio(pool: EspeakPool) -> None:
    words = "hello world one two three stop".split()
    s = pool.sentence(words, "en-us", 175, 50)
    assert len(s.word_starts_ms) == len(words)
    assert s.word_starts_ms[0] == 0 and list(s.word_starts_ms) == sorted(set(s.word_starts_ms))
    assert s.word_starts_ms[-1] < 1000 * s.audio.size / s.rate
    assert s.text == "hello world one two three stop" and s.audio.dtype == np.float32


def test_library_audio_is_what_the_command_line_speaks() -> None:
    # The same synthesizer as `espeak-ng --stdout`: the first text of a fresh process, trimmed like
    # a word, is bit for bit the word recording of tools/demo_data (a fresh espeak-ng process).
    import soxr

    from tools.demo_data import SAMPLE_RATE, trim_silence

    with EspeakPool() as fresh:
        s = fresh.sentence(["captions"], "en-gb-x-rp+m3", 160, 40)
    ours = trim_silence(soxr.resample(s.audio, s.rate, SAMPLE_RATE).astype(np.float32))
    np.testing.assert_array_equal(ours, synthesize_word("captions", "en-gb-x-rp+m3", 160, 40))


def test_a_comma_pause_comes_before_the_next_words_start(pool: EspeakPool) -> None:
    plain = pool.sentence(["hello", "world"], "en", 175, 50)
    comma = pool.sentence(["hello", "world"], "en", 175, 50, seps=[", "])
    assert comma.word_starts_ms[1] > plain.word_starts_ms[1] + 50  # the pause belongs before "world"
    db = _frame_db(comma.audio, comma.rate)
    at = comma.word_starts_ms[1] // 10
    assert db[at - 5 : at].max() < -60  # silence just before its start ...
    assert db[at + 1 : at + 10].max() > -40  # ... and the word right after it


def test_word_gap_and_separators_lengthen_the_sentence(pool: EspeakPool) -> None:
    tight = pool.sentence(["one", "two", "three"], "en-us", 175, 50)
    gapped = pool.sentence(["one", "two", "three"], "en-us", 175, 50, word_gap=20)
    assert gapped.audio.size > tight.audio.size + 0.3 * tight.rate  # two 200 ms gaps
    assert (
        gapped.word_starts_ms[2] - gapped.word_starts_ms[1]
        > tight.word_starts_ms[2] - tight.word_starts_ms[1]
    )


def test_bad_requests_are_clear_errors_and_the_pool_keeps_working(pool: EspeakPool) -> None:
    with pytest.raises(EspeakError, match="letters only"):
        pool.sentence(["g1"], "en", 175, 50)
    with pytest.raises(EspeakError, match="separators"):
        pool.sentence(["one", "two"], "en", 175, 50, seps=[])
    assert len(pool.sentence(["yes"], "en", 175, 50).word_starts_ms) == 1


def test_a_dead_child_is_reported_and_replaced_on_close() -> None:
    p = EspeakPool()
    try:
        p.sentence(["go"], "en", 175, 50)
        (child,) = p._children.values()
        child.kill()
        child.wait()
        with pytest.raises(EspeakError, match="died"):
            p.sentence(["go"], "en", 175, 50)
    finally:
        p.close()
    assert not p._children
