"""``captionist live -o`` when the transcript cannot be written (a full disk): exit 1, say so, and
keep what was captured (written again from memory, to -o or a fallback file)."""

from __future__ import annotations

import errno
import io
import os
import stat
import tempfile
from pathlib import Path

import pytest

from captionist.pipeline import headless
from captionist.pipeline.headless import run_live
from captionist.transcript import TranscriptWriteError, parse
from tests.fakes.fake_engine import FakeModel

WORDS = [f"w{i}" for i in range(5)] + [f"w{i}" for i in range(12, 18)]


def _enospc(path: Path) -> TranscriptWriteError:
    return TranscriptWriteError(path, OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)))


class FullDiskWriter:
    """A session writer on a full disk: every write fails with ENOSPC."""

    def __init__(self, folder: Path, fmt: str, **kwargs: object) -> None:
        self.path = Path(folder) / f"session.{fmt}"

    def add_tokens(self, tokens: object, **kwargs: object) -> None:
        raise _enospc(self.path)

    def close(self) -> Path:
        raise _enospc(self.path)

    def move_to(self, folder: Path) -> None:
        raise _enospc(folder)  # every disk is full


@pytest.fixture
def mic(fake_sd, tmp_path: Path) -> Path:
    from tests.conftest import speech_like

    pcm = speech_like(16000, [(0.4, True), (0.6, False), (0.4, True), (0.3, False)])
    fake_sd.add_device("Mic", rate=16000, channels=1, audio=pcm)
    model_file = tmp_path / "m.gguf"
    model_file.write_bytes(b"GGUF")
    return model_file


def _run(model_file: Path, fake_sd, dest: Path, err: io.StringIO) -> int:
    return run_live(
        str(model_file),
        "Mic",
        None,
        dest,
        0.2,
        "auto",
        sd=fake_sd,
        model_loader=lambda p, b: FakeModel(),
        writer_factory=FullDiskWriter,
        out=io.StringIO(),
        err=err,
    )


def test_a_failed_session_file_exits_1_and_the_transcript_is_written_again(
    qapp, fake_sd, mic: Path, tmp_path: Path
) -> None:
    dest = tmp_path / "talk.srt"
    err = io.StringIO()
    assert _run(mic, fake_sd, dest, err) == 1
    assert "No space left on device" in err.getvalue()
    assert f"transcript written to {dest}" in err.getvalue()  # space came back: -o gets everything
    assert " ".join(c.text for c in parse("srt", dest.read_text())).split() == WORDS


def test_when_the_output_stays_full_the_transcript_goes_to_a_fallback_file(
    qapp, fake_sd, mic: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dest = tmp_path / "talk.vtt"
    spare = tmp_path / "spare"
    monkeypatch.setattr(tempfile, "gettempdir", lambda: str(spare))
    real_write = headless.write_atomic

    def write(path: Path, text: str) -> None:
        if path.parent != spare:
            raise _enospc(path)
        real_write(path, text)

    monkeypatch.setattr(headless, "write_atomic", write)
    err = io.StringIO()
    assert _run(mic, fake_sd, dest, err) == 1
    (saved,) = spare.iterdir()
    assert saved.suffix == ".vtt" and f"transcript written to {saved}" in err.getvalue()
    assert " ".join(c.text for c in parse("vtt", saved.read_text())).split() == WORDS
    assert not dest.exists()


def test_when_nothing_can_be_written_it_says_the_captions_are_the_only_copy(
    qapp, fake_sd, mic: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def write(path: Path, text: str) -> None:
        raise _enospc(path)

    monkeypatch.setattr(headless, "write_atomic", write)
    err = io.StringIO()
    assert _run(mic, fake_sd, tmp_path / "talk.txt", err) == 1
    assert err.getvalue().rstrip().endswith("the captions above are its only copy")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full here")
def test_a_device_as_output_is_refused_before_anything_opens(qapp, fake_sd, mic: Path) -> None:
    with pytest.raises(ValueError, match="-o /dev/full is not a regular file"):
        run_live(str(mic), "Mic", None, Path("/dev/full"), 0.2, "auto", sd=fake_sd)
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_a_drive_pulled_out_during_captionist_live_goes_on_in_the_temporary_folder(
    qapp, fake_sd, mic: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real writer: the session moves to <temp>/Captionist when its folder fails, the move is
    said, and -o (writable again by the end) gets every word; the temporary copy is not left."""
    from tests.pipeline.test_controller_folder import Drive

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    out = tmp_path / "usb"
    out.mkdir()
    drive = Drive(monkeypatch, out)
    err = io.StringIO()
    with monkeypatch.context() as m:
        from captionist.pipeline.controller import SessionController

        real = SessionController._on_shown  # shown once written: the journal is open by then

        def pull_out_after_the_first_words(self, update) -> None:
            real(self, update)
            drive.pulled = drive.pulled or bool(update.new_tokens)

        m.setattr(SessionController, "_on_shown", pull_out_after_the_first_words)
        rc = run_live(
            str(mic),
            "Mic",
            None,
            out / "talk.srt",
            0.2,
            "auto",
            sd=fake_sd,
            model_loader=lambda p, b: FakeModel(),
            out=io.StringIO(),
            err=err,
        )
    assert rc == 0, err.getvalue()
    spare = tmp_path / "tmp" / "Captionist"
    assert f"cannot write the transcript to {out} (Input/output error); it goes to {spare}" in err.getvalue()
    assert " ".join(c.text for c in parse("srt", (out / "talk.srt").read_text())).split() == WORDS
    assert list(spare.iterdir()) == []
