from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
import soundfile

from captionist import paths
from captionist.audio.devices import DeviceNotFound
from captionist.pipeline.headless import run_live
from captionist.transcript import parse
from tests.fakes.fake_engine import FakeModel, expected_words
from tests.test_main_thread_gc import Cycle


def live_on_null(fake_sd, model_file: Path, dest: Path | None, out: io.StringIO, err: io.StringIO) -> int:
    """``captionist live`` on the fake "Monitor of null" source at 480 ms for 0.2 s, with the fake engine."""
    return run_live(
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


def test_live_prints_captions_and_writes_requested_file(qapp, fake_sd, wav_48k, tmp_path) -> None:
    audio, rate = soundfile.read(wav_48k, dtype="float32")
    fake_sd.add_device("Monitor of null", rate=rate, channels=2, audio=audio)
    model_file = tmp_path / "m.gguf"
    model_file.write_bytes(b"GGUF")
    out, err = io.StringIO(), io.StringIO()
    dest = tmp_path / "meeting" / "talk.vtt"
    status = live_on_null(fake_sd, model_file, dest, out, err)
    assert status == 0, err.getvalue()
    import soxr

    want = expected_words(soxr.resample(audio[:, 0], rate, 16000).astype(np.float32))
    assert out.getvalue().split() == want
    cues = parse("vtt", dest.read_text())
    assert " ".join(c.text for c in cues).split() == want
    assert f"transcript written to {dest}" in err.getvalue()


@pytest.mark.parametrize("suffix", ["vtt", "md"])
def test_live_with_output_leaves_only_that_file(qapp, fake_sd, wav_48k, tmp_path, suffix: str) -> None:
    audio, rate = soundfile.read(wav_48k, dtype="float32")
    fake_sd.add_device("Monitor of null", rate=rate, channels=2, audio=audio)
    model_file = tmp_path / "m.gguf"
    model_file.write_bytes(b"GGUF")
    dest = tmp_path / "meeting" / f"talk.{suffix}"
    err = io.StringIO()
    status = live_on_null(fake_sd, model_file, dest, io.StringIO(), err)
    assert status == 0, err.getvalue()
    assert "w0" in dest.read_text()
    assert sorted(dest.parent.iterdir()) == [dest]  # no <start time> transcript or journal beside it
    archive = paths.session_journals_dir()
    assert not archive.exists() or list(archive.iterdir()) == []  # nor a journal kept for export


def test_live_mixes_every_device_given(qapp, fake_sd, wav_48k, tmp_path) -> None:
    # --device twice: the speech on system audio and a microphone that hears nothing, mixed; both
    # are named when it starts and in the transcript
    audio, rate = soundfile.read(wav_48k, dtype="float32")
    fake_sd.add_device("Monitor of null", rate=rate, channels=2, audio=audio)
    fake_sd.add_device("USB Mic", rate=16000, channels=1, audio=np.zeros(len(audio) // 3, np.float32))
    model_file = tmp_path / "m.gguf"
    model_file.write_bytes(b"GGUF")
    out, err = io.StringIO(), io.StringIO()
    dest = tmp_path / "talk.json"
    status = run_live(
        str(model_file), ["null", "usb"], 480, dest, 0.2, "auto",
        sd=fake_sd, model_loader=lambda p, b: FakeModel(), out=out, err=err,
    )  # fmt: skip
    assert status == 0, err.getvalue()
    assert [s.device.name for s in fake_sd.streams] == ["Monitor of null", "USB Mic"]  # both opened
    assert "listening to Monitor of null (system audio) + USB Mic (" in err.getvalue()
    import soxr

    want = expected_words(soxr.resample(audio[:, 0], rate, 16000).astype(np.float32))
    assert out.getvalue().split() == want
    saved = json.loads(dest.read_text())
    assert saved["sources"] == ["Monitor of null", "USB Mic"]
    assert " ".join(c["text"] for c in saved["captions"]).split() == want


def test_live_refuses_a_device_given_twice(qapp, fake_sd, tmp_path) -> None:
    fake_sd.add_device("Monitor of null", rate=48000, channels=2)
    model_file = tmp_path / "m.gguf"
    model_file.write_bytes(b"GGUF")
    with pytest.raises(DeviceNotFound, match="'monitor' names 'Monitor of null \\(system audio\\)' again"):
        run_live(str(model_file), ["null", "monitor"], None, None, 1.0, "auto", sd=fake_sd)
    assert fake_sd.streams == []  # nothing was opened


def test_live_setup_errors_are_one_line(qapp, fake_sd, tmp_path, monkeypatch) -> None:
    fake_sd.add_device("Mic", rate=16000)
    model_file = tmp_path / "m.gguf"
    model_file.write_bytes(b"GGUF")
    with pytest.raises(ValueError, match="model file not found"):
        run_live(str(tmp_path / "nope.gguf"), None, None, None, 1.0, "auto", sd=fake_sd)
    fake = lambda p, b: FakeModel(languages=("auto", "de"), default_language="auto")  # noqa: E731
    with pytest.raises(
        ValueError, match="latency 100 ms is not supported by this model; choose one of 240, 480"
    ):
        run_live(str(model_file), None, 100, None, 1.0, "auto", sd=fake_sd, model_loader=fake)
    with pytest.raises(ValueError, match="unknown language 'xx'; choose one of auto, de"):
        run_live(str(model_file), None, None, None, 1.0, "auto", language="xx", sd=fake_sd, model_loader=fake)
    with pytest.raises(DeviceNotFound, match="no audio source matches 'usb'"):
        run_live(str(model_file), "usb", None, None, 1.0, "auto", sd=fake_sd)
    monkeypatch.setattr(paths, "bundled_demo_model", lambda: tmp_path / "no-demo.gguf")  # a build without it
    with pytest.raises(ValueError, match="no model"):
        run_live(None, None, None, None, 1.0, "auto", sd=fake_sd)
    assert not Path("m.gguf").exists()


def test_live_takes_the_models_defaults_not_the_apps_and_breaks_lines_at_ends_of_utterance(
    qapp, fake_sd, tmp_path
) -> None:
    from captionist.settings import Settings, save_settings
    from tests.conftest import speech_like

    pcm = speech_like(16000, [(0.4, True), (0.6, False), (0.4, True), (0.3, False)])
    fake_sd.add_device("Mic", rate=16000, channels=1, audio=pcm)
    model_file = tmp_path / "parakeet.gguf"
    model_file.write_bytes(b"GGUF")
    # The desktop app's slider and picker: the command line must not silently take them.
    save_settings(Settings(latency_ms={"parakeet.gguf": 160}, language={"parakeet.gguf": "de"}, delay_ms=960))
    models: list[FakeModel] = []

    def loader(path, backend):
        models.append(
            FakeModel(
                latencies_ms=(80, 160),
                default_latency_ms=80,
                languages=("auto", "de"),
                default_language="auto",
                eou_after_ms=240,
                eou_id=5,
            )
        )
        return models[-1]

    out, err = io.StringIO(), io.StringIO()
    dest = tmp_path / "talk.srt"
    status = run_live(
        str(model_file), "Mic", None, dest, 0.2, "auto", sd=fake_sd, model_loader=loader, out=out, err=err
    )
    assert status == 0, err.getvalue()
    assert "(latency 80 ms, language auto)" in err.getvalue()  # the model's defaults
    stream = models[0].streams[0]
    assert (stream.latency_ms, stream.language) == (80, None)
    lines = out.getvalue().splitlines()
    assert [line.split() for line in lines] == [
        [f"w{i}" for i in range(5)],
        [f"w{i}" for i in range(12, 18)],
    ]
    assert [c.text for c in parse("srt", dest.read_text())] == [" ".join(line.split()) for line in lines]


def test_live_help_shows_the_documented_defaults(capsys) -> None:
    from captionist.__main__ import main

    assert main(["live", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "default: the model's default" in text
    assert "the desktop app's saved choices are not used" in text


@pytest.mark.parametrize("with_output", [True, False])
def test_live_with_nothing_said_exits_0(qapp, fake_sd, tmp_path, with_output: bool) -> None:
    # Silence: the session makes no file of its own; an explicit -o still gets its (empty) transcript.
    fake_sd.add_device("Monitor of null", rate=48000, channels=2, audio=np.zeros((48000, 2), np.float32))
    model_file = tmp_path / "m.gguf"
    model_file.write_bytes(b"GGUF")
    dest = tmp_path / "meeting" / "silence.srt"
    out, err = io.StringIO(), io.StringIO()
    status = live_on_null(fake_sd, model_file, dest if with_output else None, out, err)
    assert status == 0, err.getvalue()
    assert "error" not in err.getvalue()
    assert out.getvalue().strip() == ""
    if with_output:
        assert dest.is_file() and parse("srt", dest.read_text()) == []
    else:
        assert "nothing was transcribed" in err.getvalue()
        folder = paths.default_transcript_dir()
        assert not folder.exists() or not [f for f in folder.rglob("*") if f.is_file()]


def test_a_transcript_file_behind_the_captions_is_said_once_and_its_catching_up(qapp) -> None:
    import io

    from captionist.pipeline.headless import CaptionPrinter

    out, err = io.StringIO(), io.StringIO()
    printer = CaptionPrinter(out, err)
    for seconds in (2.1, 2.2, 5.0, 0.0, 0.0, 3.0):
        printer.on_unsaved(seconds)
    assert err.getvalue().splitlines() == [
        "captionist: saving the transcript is slow: the file is 2 s behind the captions",
        "captionist: the transcript file has caught up",
        "captionist: saving the transcript is slow: the file is 3 s behind the captions",
    ]
    assert out.getvalue() == ""


def test_an_output_whose_disk_stops_answering_at_the_end_does_not_hold_the_exit(
    qapp, fake_sd, wav_48k, tmp_path, monkeypatch
) -> None:
    import threading

    from captionist.pipeline import disk_thread, headless

    audio, rate = soundfile.read(wav_48k, dtype="float32")
    fake_sd.add_device("Monitor of null", rate=rate, channels=2, audio=audio)
    model_file = tmp_path / "m.gguf"
    model_file.write_bytes(b"GGUF")
    dest = tmp_path / "share" / "talk.srt"
    hung = threading.Event()
    monkeypatch.setattr(disk_thread, "HANG_S", 0.2)
    monkeypatch.setattr(headless, "_export", lambda final, output, fmt, meta: hung.wait(30))
    err = io.StringIO()
    try:
        status = live_on_null(fake_sd, model_file, dest, io.StringIO(), err)
    finally:
        hung.set()
    assert status == 1
    said = err.getvalue()
    assert f"captionist: error: {dest}: its disk is not answering" in said
    [kept] = [p for p in dest.parent.glob("*.srt") if p != dest]  # the session's own file stays
    assert f"transcript written to {kept}" in said
    assert "w0" in kept.read_text()


class GarbageOnTheWorker(FakeModel):
    """Each feed (on the inference worker) leaves a reference cycle holding a QObject, and allocates
    past every collection threshold, as a real session's worker and audio callback do."""

    def __init__(self) -> None:
        super().__init__()
        self.freed_on: list[int] = []
        self.made = 0

    def stream(self, *args, **kwargs):
        s = super().stream(*args, **kwargs)
        feed = s.feed

        def feed_and_litter(pcm):
            Cycle(self.freed_on)
            self.made += 1
            churn = [[i] for i in range(5000)]
            del churn
            return feed(pcm)

        s.feed = feed_and_litter
        return s


def test_live_frees_cyclic_garbage_on_the_main_thread_only(qapp, fake_sd, wav_48k, tmp_path) -> None:
    import gc
    import threading

    audio, rate = soundfile.read(wav_48k, dtype="float32")
    fake_sd.add_device("Monitor of null", rate=rate, channels=2, audio=audio)
    model_file = tmp_path / "m.gguf"
    model_file.write_bytes(b"GGUF")
    model = GarbageOnTheWorker()
    err = io.StringIO()
    assert gc.isenabled()
    status = run_live(
        str(model_file), "null", 480, tmp_path / "t.txt", 1.5, "auto", sd=fake_sd,
        model_loader=lambda p, b: model, out=io.StringIO(), err=err,
    )  # fmt: skip
    assert status == 0, err.getvalue()
    assert gc.isenabled()  # given back when the session ended
    assert model.made > 0
    gc.collect()  # what was left for after the session
    assert len(model.freed_on) == model.made
    assert set(model.freed_on) == {threading.get_ident()}
