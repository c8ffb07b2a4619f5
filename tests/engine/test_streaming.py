"""Streaming == offline (reference ids), for any chunking and delay; live rules beyond the reference."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from captionist import _engine, engine

from .conftest import MODELS, load_clip, load_expected
from .gguf_edit import rewrite_gguf


def stream_tokens(
    m: engine.Model, pcm: np.ndarray, delay_tokens: int, chunks: list[int]
) -> tuple[list, list]:
    """Feed `pcm` in pieces of the given sizes (cycled), then finish; tokens and (index, event) pairs,
    each event placed where the engine says it happened among the update's tokens."""
    s = m.stream(delay_ms=delay_tokens * engine.TOKEN_MS)
    tokens: list[engine.Token] = []
    events: list[tuple[int, str]] = []
    pos, i = 0, 0
    updates = []
    while pos < len(pcm):
        n = chunks[i % len(chunks)]
        updates.append(s.feed(pcm[pos : pos + n]))
        pos += n
        i += 1
    updates.append(s.finish())
    for u in updates:
        events += [(len(tokens) + at, e) for at, e in u.placed_events()]
        tokens += u.new_tokens
    assert [t.id for t in tokens] == s.token_ids
    return tokens, events


def assert_matches_reference(tokens: list, events: list, case: dict) -> None:
    """Equal to the reference offline ids. Where the reference hit EOS before the end of the audio,
    the live stream reports end_of_utterance there and goes on: the ids up to it must match."""
    ids = [t.id for t in tokens]
    eou = [i for i, e in events if e == "end_of_utterance"]
    if eou:
        assert case["ended_with_eos"]
        assert ids[: eou[0]] == case["token_ids"]
    else:
        assert ids == case["token_ids"]


RNG_CHUNKS = [int(x) for x in np.random.default_rng(7).integers(1, 24000, size=50)]
CHUNKINGS = {"999": [999], "random": RNG_CHUNKS, "80ms": [1280], "1s": [16000], "20s": [320000]}


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("chunking", list(CHUNKINGS))
def test_stream_equals_offline_reference(
    loaded: Callable[..., engine.Model], model: str, chunking: str
) -> None:
    m = loaded(model)
    delays = (1, 2, 6, 10, 15, 30) if chunking in ("999", "random") else (1, 6, 30)
    for case in load_expected(model)["cases"]:
        if case["delay_tokens"] in delays:
            tokens, events = stream_tokens(
                m, load_clip(case["clip"]), case["delay_tokens"], CHUNKINGS[chunking]
            )
            assert_matches_reference(tokens, events, case)


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("chunk", [1, 160])
def test_tiny_chunks(loaded: Callable[..., engine.Model], model: str, chunk: int) -> None:
    m = loaded(model)
    for case in load_expected(model)["cases"]:
        if case["clip"] == "speech_short.wav" and case["delay_tokens"] in (6, 30):
            tokens, events = stream_tokens(m, load_clip(case["clip"]), case["delay_tokens"], [chunk])
            assert_matches_reference(tokens, events, case)


@pytest.mark.parametrize("model", MODELS)
def test_reference_streaming_generate(loaded: Callable[..., engine.Model], model: str) -> None:
    """Fixtures of the reference's own streaming generate."""
    for case in load_expected(model)["stream_cases"]:
        tokens, events = stream_tokens(loaded(model), load_clip(case["clip"]), case["delay_tokens"], [1680])
        assert_matches_reference(tokens, events, case)


def test_text_arrives_while_audio_streams(loaded: Callable[..., engine.Model]) -> None:
    """Tokens come out as audio goes in (not only at finish), each no later than its audio + delay."""
    m = loaded("tiny_wide")
    pcm = load_clip("speech_long.wav")
    s = m.stream(delay_ms=480)
    seen_before_finish = 0
    for pos in range(0, len(pcm), 1280):
        u = s.feed(pcm[pos : pos + 1280])
        seen_before_finish += len(u.new_tokens)
        for t in u.new_tokens:
            assert t.time_ms + 480 <= u.audio_ms_received
        if u.audio_ms_received > 480 + 2 * engine.TOKEN_MS:  # past the prompt's own wait
            assert u.lag_ms <= 3 * engine.TOKEN_MS
    assert seen_before_finish > 0.8 * len(s.finish().token_ids)


def test_end_of_utterance_does_not_end_the_live_stream(loaded: Callable[..., engine.Model]) -> None:
    m = loaded("tiny_wide")
    first, second = load_clip("speech_short.wav"), load_clip("speech_mid.wav")
    pcm = np.concatenate([first, np.zeros(4 * engine.SAMPLE_RATE, np.float32), second])
    s = m.stream(delay_ms=480)
    events: list[tuple[int, str]] = []
    tokens: list[engine.Token] = []
    for pos in range(0, len(pcm), 4000):
        u = s.feed(pcm[pos : pos + 4000])
        tokens += u.new_tokens
        events += [(u.audio_ms_received, e) for e in u.events]
    second_start_ms = (len(first) + 4 * engine.SAMPLE_RATE) * 1000 // engine.SAMPLE_RATE
    eou = [ms for ms, e in events if e == "end_of_utterance"]
    assert eou and eou[0] < second_start_ms, "EOS during the silence is reported"
    later = [t for t in tokens if t.time_ms >= second_start_ms and not t.is_control]
    assert len(later) >= 20, "the stream goes on captioning the speech after the pause"
    assert not s.finish().events == []


def test_an_end_of_utterance_sits_at_its_token_whatever_the_blocks(
    loaded: Callable[..., engine.Model],
) -> None:
    """Where among the tokens the live stream ends an utterance does not depend on how the audio was
    cut: 1 s blocks (several steps per update, pads after the end) place it as 80 ms blocks do."""
    m = loaded("tiny_wide")
    first, second = load_clip("speech_short.wav"), load_clip("speech_mid.wav")
    pcm = np.concatenate([first, np.zeros(4 * engine.SAMPLE_RATE, np.float32), second])
    want_tokens, want_events = stream_tokens(m, pcm, 6, [1280])
    eou = [at for at, e in want_events if e == "end_of_utterance"]
    assert eou and any(at < len(want_tokens) for at in eou)
    for chunks in ([16000], [48000], RNG_CHUNKS):
        tokens, events = stream_tokens(m, pcm, 6, chunks)
        assert tokens == want_tokens
        assert events == want_events
    # and within one 1 s update, the end comes before tokens of that same update
    s = m.stream(delay_ms=480)
    inside = []
    for pos in range(0, len(pcm), 16000):
        u = s.feed(pcm[pos : pos + 16000])
        inside += [at for at, e in u.placed_events() if e == "end_of_utterance" and at < len(u.new_tokens)]
    assert inside, "no end of utterance fell inside an update: the case above proves nothing"


def raw_stream(m: engine.Model, pcm: np.ndarray, delay_tokens: int, chunk: int) -> tuple[list, list]:
    """Token ids and the token index of every re-anchor, from the raw engine stream."""
    s = _engine.Stream(m._m, latency_ms=delay_tokens * 80)
    ids: list[int] = []
    reanchors: list[int] = []
    for r in [s.feed(pcm[p : p + chunk]) for p in range(0, len(pcm), chunk)] + [s.finish()]:
        reanchors += [len(ids) + at for e, at in r["events"] if e == "reanchor"]
        ids += [t[0] for t in r["new_tokens"]]
    return ids, reanchors


def test_position_limit_reanchors(
    loaded: Callable[..., engine.Model], gguf_path: Callable, tmp_path: Path
) -> None:
    small = rewrite_gguf(
        gguf_path("tiny_wide", "f32"), tmp_path / "limit.gguf", set_kv={"voxtral.decoder.max_position": 120}
    )
    limited = engine.Model(small, backend="cpu", n_threads=2)
    assert limited.info["decoder"]["max_position"] == 120
    pcm = load_clip("speech_long.wav")
    ref_ids, _ = raw_stream(loaded("tiny_wide"), pcm, 6, 4000)
    ids, reanchors = raw_stream(limited, pcm, 6, 4000)
    assert len(reanchors) >= 2
    assert ids[: reanchors[0]] == ref_ids[: reanchors[0]], "identical until the first re-anchor"
    tokens, _ = stream_tokens(limited, pcm, 6, [4000])
    times = [t.time_ms for t in tokens]
    assert times == sorted(times) and len(set(times)) == len(times), "no audio slot emitted twice"
    assert times[-1] == (len(ref_ids) - 1) * engine.TOKEN_MS, "captions continue to the end of the audio"
    assert abs(len(ids) - len(ref_ids)) <= 0.1 * len(ref_ids)


def test_delay_change_mid_session(loaded: Callable[..., engine.Model]) -> None:
    m = loaded("tiny_small")
    a, b = load_clip("speech_short.wav"), load_clip("speech_mid.wav")
    s = m.stream(delay_ms=480)
    s.feed(a[:20000])
    s.feed(a[20000:])
    u = s.set_delay(160)
    assert "segment_end" in u.events and s.delay_ms == 160
    text_a = m.transcribe(a, delay_ms=480).text
    assert s.text == text_a, "the first segment is finished exactly like an offline run"
    second = s.feed(b).new_tokens
    done = s.finish()
    second += done.new_tokens
    offline_b = m.transcribe(b, delay_ms=160)
    assert done.text == text_a + offline_b.text
    offset = len(a) * 1000 // engine.SAMPLE_RATE
    assert [t.id for t in second] == offline_b.token_ids
    assert [t.time_ms for t in second] == [t.time_ms + offset for t in offline_b.tokens]
    assert done.audio_ms_received == offset + len(b) * 1000 // engine.SAMPLE_RATE


def test_reset_keeps_working(loaded: Callable[..., engine.Model]) -> None:
    m = loaded("tiny_small")
    case = next(c for c in load_expected("tiny_small")["cases"] if c["delay_tokens"] == 2)
    s = m.stream(delay_ms=480)
    s.reset()  # while empty
    s.feed(load_clip("noise.wav"))
    s.reset(delay_ms=160)
    assert s.text == "" and s.token_ids == []
    s.feed(load_clip(case["clip"]))
    assert s.finish().token_ids == case["token_ids"]
