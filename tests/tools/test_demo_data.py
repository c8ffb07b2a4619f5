"""The demo model's data generator: espeak-ng utterances, word timings, streaming targets, tekken."""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tests.tools.espeak_marker import needs_espeak
from tools.demo_data import (
    HELDOUT_VOICES,
    IGNORE_INDEX,
    LEFT_PAD_TOKENS,
    SAMPLES_PER_TOKEN,
    TRAIN_VARIANTS,
    TRIM_DB,
    TRIM_FRAME,
    Utterance,
    WordSpan,
    make_utterance,
    pad_audio,
    stream_targets,
    synthesize_word,
    teacher_forcing,
    trim_silence,
    voices,
)
from tools.demo_vocab import (
    BOS_ID,
    DEMO_WORDS,
    EOS_ID,
    N_SPECIAL,
    STREAMING_PAD_ID,
    STREAMING_WORD_ID,
    tekken_dict,
    token_text,
    word_token_id,
    write_tekken,
)

DELAYS = (1, 6, 12)


def _rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(x.astype(np.float64) ** 2)))


# ---------------------------------------------------------------- voices and synthesis


def test_heldout_voices_and_variants_never_in_train() -> None:
    train = set(voices("train"))
    assert train and not train & set(HELDOUT_VOICES)
    heldout_variants = {v.split("+")[1] for v in HELDOUT_VOICES}
    assert len(heldout_variants) >= 2 and not heldout_variants & set(TRAIN_VARIANTS)
    with pytest.raises(ValueError, match="split"):
        voices("test")  # type: ignore[arg-type]


@needs_espeak
def test_every_voice_really_sounds_different() -> None:
    """espeak-ng ignores a variant it cannot apply ("en-gb+f5" is plain en-gb) without a word of
    warning; a held-out voice that is secretly a training voice would make the evaluation lie."""
    phrase = " ".join(DEMO_WORDS)
    seen: dict[bytes, str] = {}
    for voice in voices("train") + voices("heldout"):
        cmd = ["espeak-ng", "--stdout", "-v", voice, "-s", "170", "-p", "50", phrase]
        wav = subprocess.run(cmd, check=True, capture_output=True).stdout
        assert len(wav) > 10_000, voice
        key = hashlib.sha256(wav).digest()
        assert key not in seen, f"{voice!r} sounds exactly like {seen.get(key)!r}"
        seen[key] = voice


@needs_espeak
def test_train_utterances_use_train_voices_only() -> None:
    seen = {make_utterance(s, "train", n_words=1).voice for s in range(25)}
    assert seen <= set(voices("train")) and len(seen) > 5
    held = {make_utterance(s, "heldout", n_words=1).voice for s in range(8)}
    assert held <= set(HELDOUT_VOICES)


@needs_espeak
def test_same_seed_same_utterance_other_seed_or_split_differs() -> None:
    a, b = make_utterance(11), make_utterance(11)
    assert np.array_equal(a.audio, b.audio) and a.words == b.words and a.voice == b.voice
    c = make_utterance(12)
    assert c.audio.size != a.audio.size or not np.array_equal(c.audio, a.audio)
    h = make_utterance(11, "heldout")
    assert (h.text, h.voice) != (a.text, a.voice)


@needs_espeak
def test_audio_format_and_never_digital_silence() -> None:
    for seed in range(4):
        u = make_utterance(seed)
        assert u.audio.dtype == np.float32 and u.audio.ndim == 1
        assert 1 <= len(u.words) <= 8 and all(w.word in DEMO_WORDS for w in u.words)
        assert float(np.abs(u.audio).max()) <= 1.0
        frames = u.audio[: u.audio.size // 160 * 160].reshape(-1, 160)
        assert float(np.sqrt((frames.astype(np.float64) ** 2).mean(axis=1)).min()) > 5e-5


@needs_espeak
def test_word_timings_in_order_and_inside_audio() -> None:
    for seed in range(6):
        u = make_utterance(seed)
        prev = 0
        for w in u.words:
            assert prev <= w.start < w.end <= u.audio.size
            prev = w.end
        assert u.words[0].start > 0 and u.words[-1].end < u.audio.size


@needs_espeak
def test_energy_inside_words_and_low_in_gaps() -> None:
    for seed in range(6):
        u = make_utterance(seed, n_words=4)
        edges = [0] + [x for w in u.words for x in (w.start, w.end)] + [u.audio.size]
        gaps = [u.audio[a:b] for a, b in zip(edges[::2], edges[1::2], strict=True)]
        gap_rms = max(_rms(g) for g in gaps)
        for w in u.words:
            # worst case by design: 25 dB speech SNR, a word 6 dB under the gain and quieter than average
            assert _rms(u.audio[w.start : w.end]) > 3.0 * gap_rms, (seed, w)


@needs_espeak
def test_word_span_holds_exactly_the_synthesized_word() -> None:
    u = make_utterance(5, n_words=3)
    for w in u.words:
        ref = synthesize_word(w.word, u.voice, u.speed, u.pitch)
        assert ref.size == w.end - w.start

        def corr(shift: int, w: WordSpan = w, ref: np.ndarray = ref) -> float:
            seg = u.audio[w.start + shift : w.end + shift].astype(np.float64)
            return float(np.dot(seg, ref) / (np.linalg.norm(seg) * np.linalg.norm(ref)))

        shifts = range(-min(200, w.start), min(200, u.audio.size - w.end) + 1)
        best = max(shifts, key=corr)
        assert best == 0 and corr(0) > 0.9, (w, best, corr(0))


@needs_espeak
def test_synthesized_word_is_trimmed_tightly() -> None:
    a = synthesize_word("stop", "en-us", 160, 50)
    frames = a[: a.size // TRIM_FRAME * TRIM_FRAME].reshape(-1, TRIM_FRAME).astype(np.float64)
    rms = np.sqrt((frames**2).mean(axis=1))
    threshold = rms.max() * 10 ** (TRIM_DB / 20)
    assert rms[0] >= threshold and rms[-1] >= threshold
    with pytest.raises(ValueError, match="not a demo word"):
        synthesize_word("banana", "en-us", 160, 50)


def test_trim_silence_cuts_to_the_loud_frames() -> None:
    tone = np.sin(np.arange(800) * 0.3).astype(np.float32)
    x = np.concatenate([np.zeros(400, np.float32), tone, np.zeros(640, np.float32)])
    out = trim_silence(x)
    assert out.size == 800 and np.array_equal(out, tone)
    with pytest.raises(ValueError, match="digital silence"):
        trim_silence(np.zeros(1000, np.float32))


# ---------------------------------------------------------------- streaming targets


def _fake_utterance(n_samples: int, spans: list[tuple[str, int, int]]) -> Utterance:
    audio = np.full(n_samples, 1e-3, dtype=np.float32)
    return Utterance(audio, tuple(WordSpan(*s) for s in spans), "none", 0, 0)


@pytest.mark.parametrize("d", DELAYS)
def test_targets_place_words_at_the_first_slot_after_their_end(d: int) -> None:
    spans = [("hello", 300, 1280), ("two", 1400, 2561), ("go", 2570, 2600), ("captions", 3000, 10000)]
    u = _fake_utterance(20000, spans)
    t = stream_targets(u, d)
    n_slots = -(-20000 // SAMPLES_PER_TOKEN)
    assert t.n_slots == n_slots == 16 and len(t.slot_ids) == n_slots + d + 11
    # ceil(end / 1280): 1280 -> 1, 2561 -> 3, 2600 -> 3 (taken, pushed to 4), 10000 -> 8
    assert t.word_slots == (1, 3, 4, 8) and t.pushed == (2,)
    for (word, _, _), slot in zip(spans, t.word_slots, strict=True):
        assert t.slot_ids[slot] == word_token_id(word)
    assert t.eos_slot == n_slots and t.slot_ids[n_slots] == EOS_ID
    others = np.ones(len(t.slot_ids), bool)
    others[[*t.word_slots, t.eos_slot]] = False
    assert (t.slot_ids[others] == STREAMING_PAD_ID).all()


@pytest.mark.parametrize("d", DELAYS)
def test_teacher_forcing_matches_the_engine_layout(d: int) -> None:
    u = _fake_utterance(20000, [("yes", 500, 5000), ("no", 6000, 9000)])
    t = stream_targets(u, d)
    ids, labels = teacher_forcing(t)
    n_audio = pad_audio(u.audio, d).size // SAMPLES_PER_TOKEN
    assert ids.size == labels.size == t.n_audio_tokens == n_audio == LEFT_PAD_TOKENS + 16 + d + 11
    prompt = LEFT_PAD_TOKENS + d + 1
    assert ids[0] == BOS_ID and (ids[1:prompt] == STREAMING_PAD_ID).all()
    for p in range(n_audio):
        j = p - LEFT_PAD_TOKENS - d  # slot of the output at position p
        expect = t.slot_ids[j] if 0 <= j <= t.eos_slot else IGNORE_INDEX
        assert labels[p] == expect
        if p >= prompt:
            assert ids[p] == t.slot_ids[j - 1]  # the previous output is fed back
    # each word's label sits where the decoder has seen (d + 1) .. (d + 2) tokens of audio past its end
    for w in u.words:
        p = int(np.flatnonzero(labels == word_token_id(w.word))[0])
        seen = (p + 1 - LEFT_PAD_TOKENS) * SAMPLES_PER_TOKEN  # real samples up to position p
        assert (d + 1) * SAMPLES_PER_TOKEN <= seen - w.end < (d + 2) * SAMPLES_PER_TOKEN
    # the reference processes positions up to n_audio - 2: EOS must be supervised before that
    assert int(np.flatnonzero(labels == EOS_ID)[0]) <= n_audio - 2


@needs_espeak
@pytest.mark.parametrize("d", DELAYS)
def test_targets_of_a_real_utterance_spell_its_text(d: int) -> None:
    u = make_utterance(3)
    t = stream_targets(u, d)
    words = [token_text(int(i)).strip() for i in t.slot_ids if int(i) >= N_SPECIAL]
    assert " ".join(words) == u.text
    for i, (w, slot) in enumerate(zip(u.words, t.word_slots, strict=True)):
        natural = -(-w.end // SAMPLES_PER_TOKEN)
        assert slot == natural or (i in t.pushed and slot > natural)
        assert slot < t.n_slots  # every word is before the first right-pad slot


def test_target_errors_are_clear() -> None:
    u = _fake_utterance(2560, [("up", 100, 2560)])
    for d in (-1, 31):
        with pytest.raises(ValueError, match="delay_tokens"):
            stream_targets(u, d)
    bad = _fake_utterance(2560, [("up", 1000, 2000), ("on", 500, 900)])
    with pytest.raises(ValueError, match="out of order"):
        stream_targets(bad, 6)
    # a word ending at the audio's end lands on the first pad slot; EOS moves after it
    t = stream_targets(u, 6)
    assert t.word_slots == (2,) and t.eos_slot == 3


# ---------------------------------------------------------------- tekken


def _bpe(piece: bytes, ranks: dict[bytes, int]) -> list[bytes]:
    """tiktoken's byte-pair merge: repeatedly merge the adjacent pair with the lowest rank."""
    parts = [bytes([b]) for b in piece]
    while True:
        pairs = [(ranks.get(a + b), i) for i, (a, b) in enumerate(zip(parts, parts[1:], strict=False))]
        pairs = [(r, i) for r, i in pairs if r is not None]
        if not pairs:
            return parts
        _, i = min(pairs)
        parts[i : i + 2] = [parts[i] + parts[i + 1]]


def test_tekken_round_trips_every_word(tmp_path: Path) -> None:
    write_tekken(tmp_path / "tekken.json")
    data = json.loads((tmp_path / "tekken.json").read_text(encoding="utf-8"))
    specials = [s["token_str"] for s in data["special_tokens"]]
    assert len(specials) == N_SPECIAL == data["config"]["default_num_special_tokens"]
    assert specials[BOS_ID] == "<s>" and specials[EOS_ID] == "</s>"
    assert specials[STREAMING_PAD_ID] == "[STREAMING_PAD]"
    assert specials[STREAMING_WORD_ID] == "[STREAMING_WORD]"
    pieces = [base64.b64decode(v["token_bytes"]) for v in data["vocab"]]
    assert pieces[:256] == [bytes([i]) for i in range(256)]
    assert data["config"]["num_vocab_tokens"] == len(pieces)
    assert data["config"]["default_vocab_size"] == N_SPECIAL + len(pieces)
    ranks = {p: r for r, p in enumerate(pieces)}
    for word in DEMO_WORDS:
        merged = _bpe(f" {word}".encode(), ranks)
        assert len(merged) == 1, (word, merged)
        assert N_SPECIAL + ranks[merged[0]] == word_token_id(word)
        assert token_text(word_token_id(word)) == f" {word}"
    assert len(set(map(word_token_id, DEMO_WORDS))) == len(DEMO_WORDS)
    with pytest.raises(ValueError, match="not a demo word"):
        word_token_id("banana")


def test_control_tokens_match_the_reference_fixture_tokenizer() -> None:
    """The demo tokenizer and the committed reference fixtures share one control-token table."""
    ours = tekken_dict(480)
    reference = Path(__file__).resolve().parent.parent / "data" / "reference"
    for model in ("tiny_wide", "tiny_small"):
        ref = json.loads((reference / model / "hf" / "tekken.json").read_text())
        assert ref["special_tokens"] == ours["special_tokens"]
        assert ref["config"]["pattern"] == ours["config"]["pattern"]
        assert ref["audio"] == ours["audio"]
