"""The transcript saver writes on its own thread, batches what piles up behind a slow write, and
reports every failure without dying."""

from __future__ import annotations

import errno
import threading
from pathlib import Path

from captionist.pipeline.transcript_saver import SaverResult, TranscriptSaver
from captionist.pipeline.transcript_target import NoTranscriptFolder
from captionist.transcript import SessionWriter, parse
from tests.fakes.caption_updates import UpdateMaker


class GatedWriter:
    """Records each call (and its thread); ``add_tokens`` waits for ``gate`` once ``entered`` is set."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.calls: list[tuple] = []
        self.threads: set[str] = set()
        self.gate, self.entered = threading.Event(), threading.Event()
        self.gate.set()

    def add_tokens(self, tokens, *, utterance_ends=()) -> None:
        self.entered.set()
        assert self.gate.wait(10)
        self.threads.add(threading.current_thread().name)
        self.calls.append(("tokens", [t.piece for t in tokens], list(utterance_ends)))

    def write_gap(self, start_s: float, end_s: float, reason: str) -> None:
        self.calls.append(("gap", start_s, end_s))

    def close(self) -> Path:
        self.calls.append(("close",))
        return self.path


def _no_reopen(folder: Path):
    raise AssertionError(f"no disk hangs in this test, yet the saver reopened in {folder}")


def _saver(qtbot, writer, fallback: Path | None = None):
    saver = TranscriptSaver(lambda: (writer, None), _no_reopen, writer.path.parent, fallback)
    saved: list[int] = []
    failed: list[str] = []
    saver.saved.connect(saved.append)
    saver.failed.connect(failed.append)
    saver.start()
    return saver, saved, failed


def _close(qtbot, saver: TranscriptSaver) -> SaverResult:
    with qtbot.waitSignal(saver.closed, timeout=10000) as closed:
        saver.close()
    assert saver.join(10)
    return closed.args[0]


def test_updates_behind_a_slow_write_go_out_together_off_the_callers_thread(qtbot, tmp_path) -> None:
    writer = GatedWriter(tmp_path / "s.srt")
    writer.gate.clear()  # the disk takes its time with the first write
    saver, saved, _ = _saver(qtbot, writer)
    make = UpdateMaker()
    saver.submit(1, make.make([" one"]))
    assert writer.entered.wait(10)
    saver.submit(2, make.make([" two", " three"]))
    saver.submit(3, make.make([" four"], ends=[1]))
    saver.submit(4, make.gap(1000, 2500))
    saver.submit(5, make.make([" five"]))
    writer.gate.set()
    result = _close(qtbot, saver)
    assert writer.calls == [
        ("tokens", [" one"], []),
        ("tokens", [" two", " three", " four"], [3]),  # one write (one fsync) for two updates
        ("gap", 1.0, 2.5),  # a gap keeps its place between the words
        ("tokens", [" five"], []),
        ("close",),
    ]
    assert saved == [1, 5] and result == SaverResult(writer.path)
    assert writer.threads == {"captionist-disk"}  # never the caller's thread


def test_a_real_session_written_as_one_batch_equals_one_written_update_by_update(qtbot, tmp_path) -> None:
    make = UpdateMaker()
    updates = [
        make.make([f" w{i}" for i in range(k, k + 3)], ends=[3] if k % 9 == 0 else [])
        for k in range(0, 60, 3)
    ]
    one_by_one = SessionWriter(tmp_path / "a", "srt", token_ms=80)
    for update in updates:
        one_by_one.add_tokens(update.new_tokens, utterance_ends=update.utterance_ends)
    want = one_by_one.close()
    assert want is not None

    writer = SessionWriter(tmp_path / "b", "srt", token_ms=80)
    calls: list[int] = []
    real = writer.add_tokens
    writer.add_tokens = lambda tokens, **k: (calls.append(len(tokens)), real(tokens, **k))  # type: ignore[method-assign]
    saver = TranscriptSaver(lambda: (writer, None), _no_reopen, writer.path.parent, None)
    saved: list[int] = []
    saver.saved.connect(saved.append)
    for number, update in enumerate(updates, start=1):
        saver.submit(number, update)  # all queued before the thread runs: one batch
    saver.start()
    result = _close(qtbot, saver)
    assert calls == [60] and saved == [len(updates)]
    assert result.path is not None and result.path.read_text() == want.read_text()
    assert len(parse("srt", want.read_text())) > 3


def test_no_folder_for_the_transcript_is_said_and_every_update_still_answered(qtbot) -> None:
    def no_folder():
        raise NoTranscriptFolder(errno.ENOENT, "not to /a (gone), nor to /b (gone)")

    saver = TranscriptSaver(no_folder, _no_reopen, Path("/a"), None)
    saved: list[int] = []
    saver.saved.connect(saved.append)
    with qtbot.waitSignal(saver.failed) as failed:
        saver.start()
    assert failed.args == ["cannot write the transcript: not to /a (gone), nor to /b (gone)"]
    make = UpdateMaker()
    saver.submit(1, make.make([" hello"]))
    qtbot.waitUntil(lambda: saved == [1])
    assert _close(qtbot, saver) == SaverResult(None, failed.args[0])
    assert saver.path is None


def test_a_writer_that_raises_a_bug_is_reported_once_and_the_session_closes(qtbot, tmp_path) -> None:
    class Buggy(GatedWriter):
        def add_tokens(self, tokens, *, utterance_ends=()) -> None:
            raise TypeError("bad token")

    writer = Buggy(tmp_path / "s.txt")
    saver, saved, failed = _saver(qtbot, writer)
    make = UpdateMaker()
    saver.submit(1, make.make([" a"]))
    qtbot.waitUntil(lambda: saved == [1])
    saver.submit(2, make.make([" b"]))
    result = _close(qtbot, saver)
    assert failed == ["transcript writer failed: TypeError('bad token')"]  # once, not per update
    assert saved == [1, 2] and result == SaverResult(writer.path)


def test_a_folder_that_fails_moves_the_session_to_the_fallback(qtbot, tmp_path) -> None:
    class Failing(GatedWriter):
        def add_tokens(self, tokens, *, utterance_ends=()) -> None:
            if self.path.parent.name == "usb":
                raise OSError(errno.EIO, "Input/output error")
            super().add_tokens(tokens, utterance_ends=utterance_ends)

        def move_to(self, folder: Path) -> None:
            self.path = folder / self.path.name

    writer = Failing(tmp_path / "usb" / "s.txt")
    saver, saved, failed = _saver(qtbot, writer, fallback=tmp_path / "docs")
    moves: list = []
    saver.folder_fallback.connect(moves.append)
    make = UpdateMaker()
    saver.submit(1, make.make([" a"]))
    qtbot.waitUntil(lambda: saved == [1])
    saver.submit(2, make.make([" b"]))
    result = _close(qtbot, saver)
    assert [(m.chosen, m.used, m.code) for m in moves] == [(tmp_path / "usb", tmp_path / "docs", errno.EIO)]
    assert failed == [] and writer.calls == [("tokens", [" b"], []), ("close",)]
    assert result == SaverResult(tmp_path / "docs" / "s.txt") and saver.path == result.path
