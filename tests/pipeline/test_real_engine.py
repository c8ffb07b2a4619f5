"""The real engine (a tiny reference model) through the real capture, worker and controller."""

from __future__ import annotations

from pathlib import Path

import pytest
import soundfile

from captionist.audio.devices import Source
from captionist.pipeline.controller import SessionConfig, SessionController, SessionResult

engine = pytest.importorskip("captionist.engine")
pytest.importorskip("captionist._engine")

DATA = Path(__file__).resolve().parent.parent / "data"


def test_live_session_equals_direct_stream(qtbot, fake_sd, tmp_path) -> None:
    from captionist.convert import convert_checkpoint

    gguf = tmp_path / "tiny.gguf"
    convert_checkpoint(DATA / "reference" / "tiny_small" / "hf", gguf, "f32", progress=False)
    model = engine.Model(gguf, backend="cpu", n_threads=2)
    pcm, rate = soundfile.read(DATA / "audio" / "speech_short.wav", dtype="float32")
    pcm = pcm[: rate * 4 // 5]
    direct = model.stream(480)
    direct.feed(pcm)
    want = direct.finish()
    assert want.token_ids  # the tiny model does say something for this clip

    fake_sd.add_device("Mic", rate=rate, channels=1, audio=pcm)
    ctl = SessionController(sd=fake_sd, model_loader=lambda path, backend: model)
    results: list[SessionResult] = []
    ctl.session_finished.connect(results.append)
    src = Source("0", "Mic", "input", "ALSA", 1, rate, open_device=0)
    assert ctl.start(SessionConfig(gguf, [src], 480, tmp_path / "out", fmt="json", token_ms=model.token_ms))
    assert fake_sd.streams[-1].done.wait(10)
    with qtbot.waitSignal(ctl.session_finished, timeout=60000):
        ctl.stop()
    summary = results[0].summary
    assert summary.error is None and summary.text == want.text
    assert results[0].transcript is not None and results[0].transcript.is_file()


def _speech(seconds: float | None = None):
    pcm, rate = soundfile.read(DATA / "audio" / "speech_short.wav", dtype="float32")
    assert rate == 16000
    return pcm if seconds is None else pcm[: int(rate * seconds)]


def _live_session(qtbot, fake_sd, tmp_path, model, gguf, pcm, latency_ms, fmt="srt") -> SessionResult:
    fake_sd.add_device("Mic", rate=16000, channels=1, audio=pcm)
    ctl = SessionController(sd=fake_sd, model_loader=lambda path, backend: model)
    results: list[SessionResult] = []
    ctl.session_finished.connect(results.append)
    src = Source("0", "Mic", "input", "ALSA", 1, 16000, open_device=0)
    config = SessionConfig(gguf, [src], latency_ms, tmp_path / "out", fmt=fmt, token_ms=model.token_ms)
    assert ctl.start(config)
    assert fake_sd.streams[-1].done.wait(10)
    with qtbot.waitSignal(ctl.session_finished, timeout=60000):
        ctl.stop()
    assert results[0].summary.error is None
    return results[0]


def test_fastconformer_live_session_equals_offline_transcription(
    qtbot, fake_sd, tmp_path, nemotron_tiny_gguf
) -> None:
    model = engine.Model(nemotron_tiny_gguf, backend="cpu", n_threads=1)
    assert model.latencies_ms == (80, 160, 560, 1120) and model.default_latency_ms == 1120
    pcm = _speech()
    want = model.transcribe(pcm, latency_ms=160)
    assert want.text
    result = _live_session(qtbot, fake_sd, tmp_path, model, nemotron_tiny_gguf, pcm, 160, fmt="json")
    assert result.summary.text == want.text


def test_ends_of_utterance_make_new_cues_live_as_offline(
    qtbot, fake_sd, tmp_path, parakeet_eou_tiny_gguf
) -> None:
    from captionist.transcript import parse, segment_tokens, with_utterance_ends

    model = engine.Model(parakeet_eou_tiny_gguf, backend="cpu", n_threads=1)
    assert model.latencies_ms == (160,) and model.info["end_of_utterance"]
    pcm = _speech()
    offline = model.transcribe(pcm)
    ends = [at for at, e in offline.events if e == engine.StreamEvent.END_OF_UTTERANCE]
    assert len(ends) >= 2  # the tiny model ends utterances in this clip
    want = segment_tokens(with_utterance_ends(offline.tokens, ends), token_ms=model.token_ms)
    assert [c.starts_utterance for c in want[1:]].count(True) >= 1
    no_ends = segment_tokens(offline.tokens, token_ms=model.token_ms)
    assert len(want) > len(no_ends)  # the ends, not pauses, split these cues

    result = _live_session(qtbot, fake_sd, tmp_path, model, parakeet_eou_tiny_gguf, pcm, 160)
    cues = parse("srt", result.transcript.read_text(encoding="utf-8"))
    assert cues == want


def test_live_latency_change_with_the_real_engine_keeps_all_text(qtbot, nemotron_tiny_gguf) -> None:
    from captionist.pipeline.worker import InferenceWorker, WorkerControl
    from tests.pipeline.test_worker import ListSource, Run

    model = engine.Model(nemotron_tiny_gguf, backend="cpu", n_threads=1)
    pcm = _speech()
    cut = 15360  # 0.96 s: the worker feeds at most this much at a time
    direct = model.stream(1120)
    direct.feed(pcm[:cut])
    direct.set_latency(160)
    direct.feed(pcm[cut:])
    want = direct.finish()

    control = WorkerControl()
    chunks = [pcm[i : i + cut] for i in range(0, pcm.size, cut)]
    source = ListSource(chunks, control, on_read=lambda n: control.request_latency(160) if n == 2 else None)
    run = Run(qtbot, model, source, control, latency_ms=1120)
    assert isinstance(run.worker, InferenceWorker)
    summary = run.wait()
    assert summary.error is None and "latency set to 160 ms" in run.notices
    assert summary.text == want.text and run.stats[-1].latency_ms == 160


def test_live_language_change_with_the_real_engine_keeps_all_text(qtbot, nemotron35_tiny_gguf) -> None:
    from captionist.pipeline.worker import WorkerControl
    from tests.pipeline.test_worker import ListSource, Run

    model = engine.Model(nemotron35_tiny_gguf, backend="cpu", n_threads=1)
    assert model.languages
    other = next(x for x in model.languages if x != model.default_language)
    pcm = _speech()
    cut = 15360
    direct = model.stream()
    direct.feed(pcm[:cut])
    direct.set_language(other)
    direct.feed(pcm[cut:])
    want = direct.finish()

    control = WorkerControl()
    chunks = [pcm[i : i + cut] for i in range(0, pcm.size, cut)]
    source = ListSource(
        chunks, control, on_read=lambda n: control.request_language(other) if n == 2 else None
    )
    run = Run(qtbot, model, source, control, latency_ms=model.default_latency_ms)
    summary = run.wait()
    assert summary.error is None and f"language set to {other}" in run.notices
    assert summary.text == want.text and run.stats[-1].language == other
