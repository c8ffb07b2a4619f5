"""A transcript folder whose disk stops answering (a share whose server went away): after ``hang_s``
the saver gives it up and a new writer elsewhere gets everything, so nothing waits in memory only."""

from __future__ import annotations

import errno
import tempfile
import threading
from pathlib import Path

import pytest

from captionist.pipeline.transcript_saver import NOT_ANSWERING, SaverResult, TranscriptSaver
from captionist.pipeline.transcript_target import FolderFallback
from captionist.transcript import SessionWriter, parse
from captionist.transcript.abandoned import taken_over_by
from captionist.transcript.recovery import RecoveryOutcome, recover_folders
from tests.fakes.caption_updates import UpdateMaker
from tests.transcript.crash import died

HANG_S = 0.2


class DeadShare:
    """Writers made in ``folder`` hang in every write (opening too, with ``hang_open``) until
    ``answer()``, as on a network share whose server went away."""

    def __init__(self, *folders: Path, hang_open: bool = False) -> None:
        self.folders, self.hang_open = folders, hang_open
        self.gate = threading.Event()
        self.made: list[SessionWriter] = []  # the writers on the dead folders

    def _hang(self) -> None:
        assert self.gate.wait(30)

    def writer(self, folder: Path) -> SessionWriter:
        if folder in self.folders and self.hang_open:
            self._hang()
        writer = SessionWriter(folder, "srt", token_ms=80)
        if folder in self.folders:
            self.made.append(writer)
            real = writer.add_tokens

            def add_tokens(*args, **kwargs) -> None:
                self._hang()
                real(*args, **kwargs)

            writer.add_tokens = add_tokens  # type: ignore[method-assign]
        return writer

    def answer(self) -> None:
        self.gate.set()


def _session(qtbot, share: DeadShare, chosen: Path, fallback: Path | None) -> tuple[SaverResult, list, list]:
    opener = lambda: (share.writer(chosen), None)  # noqa: E731
    saver = TranscriptSaver(opener, share.writer, chosen, fallback, hang_s=HANG_S)
    moves: list[FolderFallback] = []
    failed: list[str] = []
    saved: list[int] = []
    saver.folder_fallback.connect(moves.append)
    saver.failed.connect(failed.append)
    saver.saved.connect(saved.append)
    saver.start()
    make = UpdateMaker()
    saver.submit(1, make.make([" one", " two"]))
    qtbot.waitUntil(lambda: saved == [1], timeout=10000)  # answered although the share is not
    saver.submit(2, make.make([" three"], ends=[1]))
    saver.submit(3, make.gap(400, 1400))
    saver.submit(4, make.make([" four"]))
    with qtbot.waitSignal(saver.closed, timeout=10000) as closed:
        saver.close()
    assert saver.join(10)
    return closed.args[0], moves, failed


def _cues(path: Path) -> list[str]:
    return [c.text for c in parse("srt", path.read_text(encoding="utf-8"))]


WANT = ["one two three", "[1.0 s of audio not transcribed: transcription fell behind]", "four"]


def test_a_share_that_stops_answering_is_given_up_and_the_session_goes_on_elsewhere(qtbot, tmp_path) -> None:
    share, docs = tmp_path / "share", tmp_path / "docs"
    dead = DeadShare(share)
    result, moves, failed = _session(qtbot, dead, share, docs)
    assert moves == [FolderFallback(share, docs, NOT_ANSWERING, errno.ETIMEDOUT)] and failed == []
    assert result.path is not None and result.path.parent == docs
    assert _cues(result.path) == WANT  # the words the share held too: nothing only in memory
    [half] = share.glob("*.journal.jsonl")  # the share still has its half: it has not answered
    assert taken_over_by(half) == result.path
    dead.answer()
    qtbot.waitUntil(lambda: not list(share.iterdir()), timeout=10000)  # then it is cleaned up
    assert taken_over_by(half) is None


def test_a_half_copy_left_when_the_app_closed_first_is_removed_by_the_next_start(qtbot, tmp_path) -> None:
    share, docs = tmp_path / "share", tmp_path / "docs"
    dead = DeadShare(share)
    result, _, _ = _session(qtbot, dead, share, docs)
    [half] = share.glob("*.journal.jsonl")
    for writer in dead.made:  # the app is closed; its left writer never saw the share answer
        died(writer)
    # The next start:
    report = recover_folders([docs, share])
    assert [s.outcome for s in report.sessions] == [RecoveryOutcome.TAKEN_OVER]
    assert report.message() == (
        f"Removed the half copy of a session left in {share} (the whole session is in {result.path})."
    )
    assert not list(share.iterdir()) and taken_over_by(half) is None
    assert result.path is not None and _cues(result.path) == WANT and report.latest is None
    dead.gate.set()


def test_a_share_that_does_not_answer_at_the_start_is_not_waited_for(qtbot, tmp_path) -> None:
    share, docs = tmp_path / "share", tmp_path / "docs"
    dead = DeadShare(share, hang_open=True)
    result, moves, _ = _session(qtbot, dead, share, docs)
    assert [(m.chosen, m.used) for m in moves] == [(share, docs)]
    assert result.path is not None and _cues(result.path) == WANT
    dead.answer()
    qtbot.waitUntil(lambda: share.is_dir() and not list(share.iterdir()), timeout=10000)


def test_when_the_default_folder_hangs_too_the_temporary_folder_takes_it(
    qtbot, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    share, docs = tmp_path / "share", tmp_path / "docs"  # Documents redirected to the same server
    dead = DeadShare(share, docs)
    result, moves, failed = _session(qtbot, dead, share, docs)
    temp = tmp_path / "tmp" / "Captionist"
    assert [(m.chosen, m.used) for m in moves] == [(share, temp)] and failed == []
    assert result.path is not None and result.path.parent == temp and _cues(result.path) == WANT
    dead.answer()


def test_when_no_folder_answers_the_session_goes_on_without_a_file(
    qtbot, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    share, docs = tmp_path / "share", tmp_path / "docs"
    dead = DeadShare(share, docs, tmp_path / "tmp" / "Captionist", hang_open=True)
    result, moves, failed = _session(qtbot, dead, share, docs)
    assert moves == [] and result.path is None
    assert failed == [f"cannot write the transcript: {share} is not answering, and no other folder takes it"]
    assert result.error == failed[0]
    dead.answer()
