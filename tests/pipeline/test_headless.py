from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
import soundfile

from captionist import paths
from captionist.audio.devices import DeviceNotFound
from captionist.pipeline.headless import run_live
from captionist.transcript import parse
from tests.fakes.fake_engine import FakeModel, expected_words


def test_live_prints_captions_and_writes_requested_file(qapp, fake_sd, wav_48k, tmp_path) -> None:
    audio, rate = soundfile.read(wav_48k, dtype="float32")
    fake_sd.add_device("Monitor of null", rate=rate, channels=2, audio=audio)
    model_file = tmp_path / "m.gguf"
    model_file.write_bytes(b"GGUF")
    out, err = io.StringIO(), io.StringIO()
    dest = tmp_path / "meeting" / "talk.vtt"
    status = run_live(
        str(model_file),
        "null",
        480,
        dest,
        0.2,
        "auto",
        sd=fake_sd,
        model_loader=lambda p, b: FakeModel(),
        out=out,
        err=err,
    )
    assert status == 0, err.getvalue()
    import soxr

    want = expected_words(soxr.resample(audio[:, 0], rate, 16000).astype(np.float32))
    assert out.getvalue().split() == want
    cues = parse("vtt", dest.read_text())
    assert " ".join(c.text for c in cues).split() == want
    assert f"transcript written to {dest}" in err.getvalue()


def test_live_setup_errors_are_one_line(qapp, fake_sd, tmp_path, monkeypatch) -> None:
    fake_sd.add_device("Mic", rate=16000)
    model_file = tmp_path / "m.gguf"
    model_file.write_bytes(b"GGUF")
    with pytest.raises(ValueError, match="model file not found"):
        run_live(str(tmp_path / "nope.gguf"), None, None, None, 1.0, "auto", sd=fake_sd)
    with pytest.raises(ValueError, match="delay_ms must be"):
        run_live(str(model_file), None, 100, None, 1.0, "auto", sd=fake_sd)
    with pytest.raises(DeviceNotFound, match="no audio source matches 'usb'"):
        run_live(str(model_file), "usb", None, None, 1.0, "auto", sd=fake_sd)
    monkeypatch.setattr(paths, "bundled_demo_model", lambda: tmp_path / "no-demo.gguf")  # a build without it
    with pytest.raises(ValueError, match="no model"):
        run_live(None, None, None, None, 1.0, "auto", sd=fake_sd)
    assert not Path("m.gguf").exists()
