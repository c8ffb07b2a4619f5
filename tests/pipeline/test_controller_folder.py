"""The controller's transcript folder: a chosen folder that fails at the start or during a session
sends the session elsewhere, says where, and loses no word."""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

import pytest

from captionist.pipeline.controller import SessionConfig, SessionResult
from captionist.pipeline.session_state import SessionState
from captionist.pipeline.transcript_target import FolderFallback
from captionist.transcript import journal as journal_module
from captionist.transcript import parse
from captionist.transcript.folders import remembered_folders
from tests.fakes.fake_engine import FakeModel
from tests.pipeline.test_controller import _run_session, _setup


class Drive:
    """Journals opened under ``folder`` fail every write once the drive is pulled out."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
        self.folder, self.pulled, self.fds = folder, False, set()
        real_open, real_write, real_close = os.open, os.write, os.close

        def tracked_open(path, flags, mode=0o777, **kwargs):
            fd = real_open(path, flags, mode, **kwargs)
            if Path(path).is_relative_to(folder):
                self.fds.add(fd)
            return fd

        def write(fd: int, data) -> int:
            if self.pulled and fd in self.fds:
                raise OSError(errno.EIO, os.strerror(errno.EIO))
            return real_write(fd, data)

        def close(fd: int) -> None:
            self.fds.discard(fd)  # the number may be reused for a file elsewhere
            real_close(fd)

        monkeypatch.setattr(journal_module.os, "open", tracked_open)
        monkeypatch.setattr(journal_module.os, "close", close)
        monkeypatch.setattr(journal_module.os, "write", write)


def _words(result: SessionResult) -> list[str]:
    assert result.transcript is not None
    return " ".join(c.text for c in parse("srt", result.transcript.read_text(encoding="utf-8"))).split()


def test_a_chosen_folder_that_cannot_be_used_sends_the_session_to_the_default(
    qtbot, fake_sd, wav_48k, tmp_path
) -> None:
    ctl, src, _ = _setup(fake_sd, wav_48k, FakeModel())
    fallbacks: list[FolderFallback] = []
    ctl.folder_fallback.connect(fallbacks.append)
    chosen, default = tmp_path / "USB" / "Notes", tmp_path / "Documents" / "Captionist"
    cfg = SessionConfig(Path("m.gguf"), [src], 480, chosen, "srt", token_ms=80, fallback_folder=default)
    result = _run_session(qtbot, ctl, fake_sd, cfg)
    assert fallbacks == [FolderFallback(chosen, default, "No such file or directory", errno.ENOENT)]
    assert result.transcript is not None and result.transcript.parent == default
    assert not (tmp_path / "USB").exists()
    assert remembered_folders() == [default]  # crash recovery will look there too


def test_a_session_no_folder_can_take_goes_on_captioning_without_a_file(
    qtbot, fake_sd, wav_48k, tmp_path
) -> None:
    ctl, src, _ = _setup(fake_sd, wav_48k, FakeModel())
    (tmp_path / "file").write_text("")
    chosen, default = tmp_path / "gone" / "Notes", tmp_path / "file" / "Captionist"
    errors: list[str] = []
    ctl.error.connect(errors.append)
    words: list[str] = []
    ctl.caption.connect(lambda update: words.extend(t.piece.strip() for t in update.new_tokens))
    cfg = SessionConfig(Path("m.gguf"), [src], 480, chosen, token_ms=80, fallback_folder=default)
    result = _run_session(qtbot, ctl, fake_sd, cfg)
    why = (
        f"cannot write the transcript: not to {chosen} (No such file or directory), "
        f"nor to {default} (Not a directory)"
    )
    assert errors == [why]  # said once, and the meeting is still captioned
    assert words == result.summary.text.split() and words
    assert result.transcript is None and result.write_error == why
    assert not (tmp_path / "gone").exists()
    assert remembered_folders() == []


def test_the_folder_a_session_writes_to_is_remembered(qtbot, fake_sd, wav_48k, tmp_path) -> None:
    ctl, src, _ = _setup(fake_sd, wav_48k, FakeModel())
    cfg = SessionConfig(
        Path("m.gguf"), [src], 480, tmp_path / "a", token_ms=80, fallback_folder=tmp_path / "d"
    )
    _run_session(qtbot, ctl, fake_sd, cfg)
    assert remembered_folders() == [tmp_path / "a"]


def test_a_drive_pulled_out_during_a_session_sends_the_rest_to_the_default(
    qtbot, fake_sd, wav_48k, tmp_path, monkeypatch
) -> None:
    ctl, src, _ = _setup(fake_sd, wav_48k, FakeModel())
    chosen, default = tmp_path / "USB" / "Notes", tmp_path / "Documents" / "Captionist"
    chosen.mkdir(parents=True)
    drive = Drive(monkeypatch, chosen)
    events: list[object] = []  # FolderFallback, or the words of a caption update
    ctl.folder_fallback.connect(events.append)
    errors: list[str] = []
    ctl.error.connect(errors.append)

    def pull_out_after_the_first_words(update) -> None:
        if update.new_tokens:
            events.append([t.piece for t in update.new_tokens])
            drive.pulled = True

    ctl.caption.connect(pull_out_after_the_first_words)
    cfg = SessionConfig(Path("m.gguf"), [src], 480, chosen, "srt", token_ms=80, fallback_folder=default)
    result = _run_session(qtbot, ctl, fake_sd, cfg)
    moves = [e for e in events if isinstance(e, FolderFallback)]
    assert moves == [FolderFallback(chosen, default, "Input/output error", errno.EIO)]
    assert errors == [] and result.write_error is None
    assert result.transcript is not None and result.transcript.parent == default
    assert _words(result) == result.summary.text.split()  # every word, before and after the move
    assert remembered_folders()[0] == default


def test_a_session_that_cannot_close_in_its_folder_is_closed_in_the_temporary_folder(
    qtbot, fake_sd, wav_48k, tmp_path, monkeypatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    ctl, src, _ = _setup(fake_sd, wav_48k, FakeModel())
    chosen = tmp_path / "USB" / "Notes"
    drive = Drive(monkeypatch, chosen)
    moves: list[FolderFallback] = []
    ctl.folder_fallback.connect(moves.append)
    results: list[SessionResult] = []
    ctl.session_finished.connect(results.append)
    assert ctl.start(SessionConfig(Path("m.gguf"), [src], 480, chosen, "srt", token_ms=80))  # captionist live
    assert fake_sd.streams[-1].done.wait(5)
    qtbot.waitUntil(lambda: bool(drive.fds) and ctl.state is SessionState.RUNNING)  # the saver opened it
    drive.pulled = True
    with qtbot.waitSignal(ctl.session_finished, timeout=10000):
        ctl.stop()
    [result] = results
    assert result.transcript is not None and result.transcript.parent == tmp_path / "tmp" / "Captionist"
    assert moves and moves[-1].used == tmp_path / "tmp" / "Captionist"
    assert _words(result) == result.summary.text.split() and result.summary.text
