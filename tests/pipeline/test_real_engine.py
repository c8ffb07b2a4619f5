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
    assert ctl.start(SessionConfig(gguf, [src], 480, tmp_path / "out", fmt="json"))
    assert fake_sd.streams[-1].done.wait(10)
    with qtbot.waitSignal(ctl.session_finished, timeout=60000):
        ctl.stop()
    summary = results[0].summary
    assert summary.error is None and summary.text == want.text
    assert results[0].transcript is not None and results[0].transcript.is_file()
