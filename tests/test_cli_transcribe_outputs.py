"""``captionist transcribe``: where transcripts go (-o rules, JSON Lines, atomic writes, full disk)
and what it says about unusable inputs, with the fake engine of ``test_cli_transcribe``."""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from captionist import engine
from captionist.__main__ import main
from captionist.audio.files import BLOCK_SAMPLES, decodable_formats
from tests.test_cli_transcribe import FakeModel, _one_error_line, speech

WORDS = "w0 w1 w2 w3 w4 w5 w20 w21 w22 w23 w24"


@pytest.fixture(autouse=True)
def fake_engine(monkeypatch: pytest.MonkeyPatch) -> type[FakeModel]:
    FakeModel.instances = []
    monkeypatch.setattr(engine, "Model", FakeModel, raising=False)
    return FakeModel


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "model.gguf"
    path.write_bytes(b"GGUF")
    return path


def test_several_inputs_with_a_file_name_as_output_are_refused(tmp_path: Path, model: Path, capsys) -> None:
    a, b = speech(tmp_path, "a.wav"), speech(tmp_path, "b.wav")
    combined = tmp_path / "combined.txt"
    assert main(["transcribe", str(a), str(b), "--model", str(model), "-o", str(combined)]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert f"-o {combined} does not exist: with several inputs, -o must be an existing directory" in line
    assert not combined.exists() and FakeModel.instances == []  # no folder made, no model loaded


def test_one_input_into_a_directory(tmp_path: Path, model: Path) -> None:
    src = speech(tmp_path, "talk.wav")
    assert main(["transcribe", str(src), "--model", str(model), "-o", f"{tmp_path / 'new'}/"]) == 0
    assert (tmp_path / "new" / "talk.txt").read_text(encoding="utf-8") == WORDS + "\n"
    (tmp_path / "old").mkdir()
    assert main(["transcribe", str(src), "--model", str(model), "-o", str(tmp_path / "old")]) == 0
    assert [p.name for p in (tmp_path / "old").iterdir()] == ["talk.txt"]


def test_several_json_transcripts_to_stdout_are_json_lines(
    tmp_path: Path, model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = speech(tmp_path, "a.wav"), speech(tmp_path, "b.flac")
    assert main(["transcribe", str(a), str(b), "--model", str(model), "--format", "json"]) == 0
    lines = capsys.readouterr().out.splitlines()
    docs = [json.loads(line) for line in lines]
    assert [d["file"] for d in docs] == [str(a), str(b)]
    assert all(d["text"] == WORDS for d in docs)  # no leading space


def test_the_json_text_field_is_stripped(tmp_path: Path, model: Path, capsys) -> None:
    assert main(["transcribe", str(speech(tmp_path)), "--model", str(model), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["text"] == WORDS and doc["tokens"][0]["piece"] == " w0"


def _full_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every fsync fails as on a full disk (where data reaches the device at the latest)."""

    def no_space(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", no_space)


def test_a_full_disk_leaves_no_file_exits_2_and_prints_the_transcript(
    tmp_path: Path, model: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    dest = tmp_path / "talk.srt"
    _full_disk(monkeypatch)
    assert main(["transcribe", str(speech(tmp_path)), "--model", str(model), "-o", str(dest)]) == 2
    captured = capsys.readouterr()
    assert _one_error_line(captured.err) == (
        f"captionist: error: cannot write transcript file {dest}: No space left on device; "
        "the transcript follows on stdout"
    )
    assert "w0 w1 w2" in captured.out and "-->" in captured.out  # the work is kept
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.gguf", "talk.wav"]  # no 0-byte file


def test_a_failed_write_keeps_the_previous_file(
    tmp_path: Path, model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dest = tmp_path / "talk.txt"
    dest.write_text("yesterday's transcript\n")
    _full_disk(monkeypatch)
    assert main(["transcribe", str(speech(tmp_path)), "--model", str(model), "-o", str(dest)]) == 2
    assert dest.read_text() == "yesterday's transcript\n"


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full here")
def test_a_device_as_output_is_refused_and_left_alone(tmp_path: Path, model: Path, capsys) -> None:
    assert main(["transcribe", str(speech(tmp_path)), "--model", str(model), "-o", "/dev/full"]) == 2
    assert "-o /dev/full is not a regular file" in _one_error_line(capsys.readouterr().err)
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode) and FakeModel.instances == []


def test_a_fifo_or_directory_input_is_named(tmp_path: Path, model: Path, capsys) -> None:
    fifo = tmp_path / "pipe.wav"
    os.mkfifo(fifo)
    assert main(["transcribe", str(fifo), "--model", str(model)]) == 2
    assert f"{fifo} is a named pipe (FIFO), not an audio file" in _one_error_line(capsys.readouterr().err)
    assert main(["transcribe", str(tmp_path), "--model", str(model)]) == 2
    assert f"{tmp_path} is a directory, not an audio file" in _one_error_line(capsys.readouterr().err)
    assert FakeModel.instances == []


def test_files_reach_the_stream_in_bounded_blocks(tmp_path: Path, model: Path, capsys) -> None:
    src = tmp_path / "long.flac"
    with sf.SoundFile(src, "w", 44100, 2, format="FLAC", subtype="PCM_16") as f:
        for _ in range(6):  # one minute
            f.write(np.zeros((441000, 2), np.float32))
    assert main(["transcribe", str(src), "--model", str(model), "--format", "json"]) == 0
    (m,) = FakeModel.instances
    assert max(m.block_sizes) <= BLOCK_SAMPLES and sum(m.block_sizes) == 16000 * 60
    assert json.loads(capsys.readouterr().out)["duration_ms"] == 60000


@pytest.mark.skipif("MP3" not in decodable_formats(), reason="this libsndfile has no MP3 support")
def test_a_damaged_mp3_gives_one_warning_line(
    tmp_path: Path, model: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "good.mp3"
    t = np.arange(3 * 16000) / 16000
    sf.write(good, (0.3 * np.sin(2 * np.pi * 200 * t)).astype(np.float32), 16000, format="MP3")
    data = bytearray(good.read_bytes())
    rng = np.random.default_rng(0)
    for i in range(200, len(data), 7):
        data[i] = int(rng.integers(0, 256))
    damaged = tmp_path / "damaged.mp3"
    damaged.write_bytes(bytes(data))
    assert main(["transcribe", str(damaged), "--model", str(model)]) == 0
    err = capfd.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(f"captionist: warning: {damaged}: the decoder skipped damaged")
