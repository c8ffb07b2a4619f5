"""The silent start of a Voxtral stream (engine/src/models/voxtral/voxtral_silence.h): the first
stream of a model computes the left padding's audio tokens and the prompt positions that read only
them, later streams and re-anchors copy them, and every stream decodes the reference's tokens."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from captionist import _engine, engine

from .conftest import DEVICE_PARAMS, MODELS, load_clip, load_expected
from .gguf_edit import rewrite_gguf

SILENT_TOKENS = 31  # of the 32 left-pad tokens, the last one's frames reach the first real sample


def run(m: engine.Model, pcm: np.ndarray, delay_tokens: int, capture: bool = False) -> tuple[list[int], dict]:
    s = _engine.Stream(m._m, latency_ms=delay_tokens * 80, capture=capture)
    results = [s.feed(pcm), s.finish()]
    return [t[0] for r in results for t in r["new_tokens"]], dict(s.timings())


def restored(t: dict[str, float]) -> tuple[int, int]:
    return int(t["n_silence_tokens_restored"]), int(t["n_silence_positions_restored"])


def golden(model: str) -> dict[tuple[str, int], list[int]]:
    return {(c["clip"], c["delay_tokens"]): c["token_ids"] for c in load_expected(model)["cases"]}


@pytest.mark.parametrize("model", MODELS)
def test_later_streams_copy_the_silent_start_and_decode_the_reference(
    gguf_path: Callable[[str, str], Path], model: str
) -> None:
    """A fresh model: its first stream computes everything and saves the start; a stream at another
    delay copies the encoder's part and computes the decoder's; a stream on another clip copies
    both. Each stream's tokens are the reference's (offline generate, expected.json). The later
    streams run on other clips than the one that saved the start, so a start that held anything of
    the audio (one token too many counted as silent) would show in their tokens."""
    want = golden(model)
    m = engine.Model(gguf_path(model, "f32"), backend="cpu", n_threads=2)
    steps = [  # (clip, delay, restored encoder tokens, restored decoder positions)
        ("speech_short.wav", 6, 0, 0),
        ("speech_mid.wav", 10, SILENT_TOKENS, 0),
        ("speech_long.wav", 6, SILENT_TOKENS, SILENT_TOKENS),
        ("noise.wav", 10, SILENT_TOKENS, SILENT_TOKENS),
        ("silence.wav", 6, SILENT_TOKENS, SILENT_TOKENS),
    ]
    for clip, delay, enc, dec in steps:
        ids, t = run(m, load_clip(clip), delay)
        assert restored(t) == (enc, dec), (clip, delay)
        assert ids[: len(want[clip, delay])] == want[clip, delay], (clip, delay)


@pytest.mark.parametrize("model", MODELS)
def test_copying_changes_nothing(
    gguf_path: Callable[[str, str], Path], monkeypatch: pytest.MonkeyPatch, model: str
) -> None:
    """Every golden clip and delay: the same ids with the start copied as with it computed
    (CAPTIONIST_NO_SILENCE_CACHE=1), and a stream that captures intermediates computes its whole
    start (its mel, encoder output and embeddings cover the left padding too)."""
    path = gguf_path(model, "f32")
    m = engine.Model(path, backend="cpu", n_threads=2)
    clip = load_clip("speech_short.wav")
    run(m, clip, 1)  # saves the encoder's start
    monkeypatch.setenv("CAPTIONIST_NO_SILENCE_CACHE", "1")
    computed = engine.Model(path, backend="cpu", n_threads=2)
    plain = {key: run(computed, load_clip(key[0]), key[1]) for key in golden(model)}
    monkeypatch.delenv("CAPTIONIST_NO_SILENCE_CACHE")
    saved = None  # the model keeps the decoder's start of one delay: the last one it saw
    for (name, delay), (ids, t) in sorted(plain.items(), key=lambda item: item[0][1]):
        assert restored(t) == (0, 0)
        if delay != saved:  # the first stream at this delay saves the decoder's start
            run(m, load_clip(name), delay)
            saved = delay
        copied, tc = run(m, load_clip(name), delay)
        assert restored(tc) == (SILENT_TOKENS, SILENT_TOKENS)
        assert copied == ids, (name, delay)

    ids, t = run(m, clip, 6, capture=True)
    assert restored(t) == (0, 0)
    s = _engine.Stream(m._m, latency_ms=480, capture=True)
    s.feed(clip)
    s.finish()
    cap: dict[str, Any] = s.captured()
    n_audio = int(s.timings()["n_audio_tokens"])
    assert n_audio >= 32 + len(clip) // 1280
    assert cap["embeds"].shape[0] == n_audio and cap["mel"].shape[0] == 8 * n_audio


def test_a_long_stream_copies_the_start_at_every_reanchor(gguf_path: Callable, tmp_path: Path) -> None:
    """The decoder starts over when positions run out; each fresh prompt's silent part is copied,
    and the tokens are those of a model that computes it each time."""
    small = rewrite_gguf(
        gguf_path("tiny_wide", "f32"), tmp_path / "limit.gguf", set_kv={"voxtral.decoder.max_position": 120}
    )
    pcm = load_clip("speech_long.wav")
    m = engine.Model(small, backend="cpu", n_threads=2)
    events: list[str] = []

    def stream(model: engine.Model) -> tuple[list[int], dict]:
        s = _engine.Stream(model._m, latency_ms=480)
        ids: list[int] = []
        for r in [s.feed(pcm[p : p + 4000]) for p in range(0, len(pcm), 4000)] + [s.finish()]:
            ids += [t[0] for t in r["new_tokens"]]
            events.extend(e for e, _ in r["events"])
        return ids, dict(s.timings())

    first, _ = stream(m)
    n_reanchors = events.count("reanchor")
    assert n_reanchors >= 2
    second, t = stream(m)
    assert second == first
    assert restored(t) == (SILENT_TOKENS, SILENT_TOKENS * (1 + n_reanchors))


def test_first_streams_on_several_threads_agree(gguf_path: Callable[[str, str], Path]) -> None:
    """Four streams start at once on a fresh model: each computes the start (or copies one another
    saved first), all decode the same, and the next stream copies it."""
    m = engine.Model(gguf_path("tiny_small", "f32"), backend="cpu", n_threads=1)
    pcm = load_clip("speech_mid.wav")
    out: dict[int, list[int]] = {}
    errors: list[BaseException] = []
    go = threading.Barrier(4)

    def work(i: int) -> None:
        try:
            go.wait()
            out[i] = run(m, pcm, 6)[0]
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=120)
    assert not errors, errors
    assert len(out) == 4 and all(ids == out[0] for ids in out.values())
    ids, t = run(m, pcm, 6)
    assert ids == out[0] and restored(t) == (SILENT_TOKENS, SILENT_TOKENS)
    assert ids[: len(golden("tiny_small")["speech_mid.wav", 6])] == golden("tiny_small")["speech_mid.wav", 6]


@pytest.mark.parametrize("device", DEVICE_PARAMS)
def test_the_start_is_copied_in_device_memory_too(
    device: str, gguf_path: Callable[[str, str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a GPU backend (lavapipe in CI) the saved start lives in device memory and is copied there:
    the same ids as computing it on that device, clip after clip."""
    path = gguf_path("tiny_small", "f32")
    clips = ("speech_short.wav", "speech_mid.wav", "noise.wav")
    monkeypatch.setenv("CAPTIONIST_NO_SILENCE_CACHE", "1")  # read as each stream is made
    computed = engine.Model(path, backend=device.lower(), n_threads=1)
    plain = {name: run(computed, load_clip(name), 6) for name in clips}
    monkeypatch.delenv("CAPTIONIST_NO_SILENCE_CACHE")
    m = engine.Model(path, backend=device.lower(), n_threads=1)
    for i, name in enumerate(clips):
        ids, t = run(m, load_clip(name), 6)
        assert restored(t) == ((0, 0) if i == 0 else (SILENT_TOKENS, SILENT_TOKENS))
        assert restored(plain[name][1]) == (0, 0)
        assert ids == plain[name][0], name
