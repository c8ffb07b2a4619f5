from __future__ import annotations

from pathlib import Path

import numpy as np
import soundfile

from captionist.audio.devices import Source
from captionist.pipeline.controller import SessionConfig, SessionController, SessionResult
from captionist.pipeline.session_state import SessionState
from captionist.transcript import parse
from tests.fakes.fake_engine import FakeModel
from tests.fakes.fake_sounddevice import FakeSoundDevice


def _setup(fake_sd: FakeSoundDevice, wav: Path, model: FakeModel):
    audio, rate = soundfile.read(wav, dtype="float32")
    fake_sd.add_device("Mic", rate=rate, channels=2, audio=audio)
    loads: list[tuple[Path, str]] = []

    def loader(path: Path, backend: str) -> FakeModel:
        loads.append((path, backend))
        return model

    ctl = SessionController(sd=fake_sd, model_loader=loader)
    src = Source("0", "Mic", "input", "ALSA", 2, rate, open_device=0)
    return ctl, src, loads


def _run_session(
    qtbot, ctl: SessionController, fake_sd: FakeSoundDevice, cfg: SessionConfig
) -> SessionResult:
    results: list[SessionResult] = []
    ctl.session_finished.connect(results.append)
    assert ctl.start(cfg)
    assert ctl.state == SessionState.RUNNING
    assert fake_sd.streams[-1].done.wait(5)
    with qtbot.waitSignal(ctl.session_finished, timeout=10000):
        ctl.stop()
    assert ctl.state == SessionState.IDLE
    return results[-1]


def test_session_writes_transcript_and_restarts_with_cached_model(qtbot, fake_sd, wav_48k, tmp_path) -> None:
    model = FakeModel()
    ctl, src, loads = _setup(fake_sd, wav_48k, model)
    captions = []
    ctl.caption.connect(captions.append)
    cfg = SessionConfig(
        Path("m.gguf"), [src], latency_ms=480, folder=tmp_path / "out", fmt="srt", token_ms=80
    )
    first = _run_session(qtbot, ctl, fake_sd, cfg)
    assert first.summary.error is None and first.summary.text
    assert first.transcript is not None and first.transcript.parent == tmp_path / "out"
    cues = parse("srt", first.transcript.read_text())
    assert " ".join(c.text for c in cues).split() == first.summary.text.split()
    assert captions[-1].final
    second = _run_session(qtbot, ctl, fake_sd, cfg)
    assert second.summary.text == first.summary.text
    assert second.transcript != first.transcript
    assert loads == [(Path("m.gguf"), "auto")]  # loaded once, reused on restart


def test_open_failure_reports_error_and_stays_idle(qtbot, fake_sd, wav_48k) -> None:
    ctl, src, _ = _setup(fake_sd, wav_48k, FakeModel())
    fake_sd.devices[0].present = False
    with qtbot.waitSignal(ctl.error) as blocker:
        assert not ctl.start(SessionConfig(Path("m.gguf"), [src], 480, None, token_ms=80))
    assert blocker.args == ["cannot open 'Mic': Device unavailable: Mic"]
    assert ctl.state == SessionState.IDLE


def test_model_error_ends_session_with_message(qtbot, fake_sd, wav_48k) -> None:
    audio, rate = soundfile.read(wav_48k, dtype="float32")
    fake_sd.add_device("Mic", rate=rate, channels=2, audio=audio)

    def loader(path: Path, backend: str):
        raise RuntimeError(f"{path}: not a Voxtral Realtime GGUF")

    ctl = SessionController(sd=fake_sd, model_loader=loader)
    errors: list[str] = []
    ctl.error.connect(errors.append)
    src = Source("0", "Mic", "input", "ALSA", 2, rate, open_device=0)
    with qtbot.waitSignal(ctl.session_finished, timeout=10000) as blocker:
        ctl.start(SessionConfig(Path("bad.gguf"), [src], 480, None, token_ms=80))
    assert errors == ["bad.gguf: not a Voxtral Realtime GGUF"]
    assert blocker.args[0].summary.error == errors[0]
    assert ctl.state == SessionState.IDLE and not fake_sd.streams[-1].active


def test_silence_warning(qtbot, fake_sd) -> None:
    fake_sd.add_device("Quiet", rate=16000, channels=1, audio=np.zeros(16000 * 3, np.float32))
    ctl = SessionController(sd=fake_sd, model_loader=lambda p, b: FakeModel())
    src = Source("0", "Quiet", "input", "ALSA", 1, 16000, open_device=0)
    with qtbot.waitSignal(ctl.notice, timeout=5000) as blocker:
        ctl.start(SessionConfig(Path("m.gguf"), [src], 480, None, silence_warning_s=2.0, token_ms=80))
    assert blocker.args[0].startswith("no sound from 'Quiet' for 2 s")
    with qtbot.waitSignal(ctl.session_finished, timeout=10000):
        ctl.stop()


def test_shutdown_finishes_session_and_closes_transcript(qtbot, fake_sd, wav_48k, tmp_path) -> None:
    ctl, src, _ = _setup(fake_sd, wav_48k, FakeModel())
    results: list[SessionResult] = []
    ctl.session_finished.connect(results.append)
    assert ctl.start(SessionConfig(Path("m.gguf"), [src], 480, tmp_path, fmt="json", token_ms=80))
    assert fake_sd.streams[-1].done.wait(5)
    ctl.shutdown()
    assert ctl.state == SessionState.IDLE and results[0].transcript is not None
    cues = parse("json", results[0].transcript.read_text())
    assert " ".join(c.text for c in cues).split() == results[0].summary.text.split()
