"""A transcript folder on a slow or hung disk: the controller's thread never waits for it, captions
are shown once they are on disk (or after ``save_wait_s``), and the lag counts captions held back."""

from __future__ import annotations

import threading
from pathlib import Path

from PySide6.QtCore import QCoreApplication

from captionist.pipeline.controller import SessionConfig, SessionController, SessionResult
from captionist.pipeline.session_state import SessionState
from captionist.transcript import SessionWriter, parse
from tests.fakes.fake_engine import FakeModel
from tests.pipeline.test_controller import _setup

WAV_MS = 1700  # wav_48k: 0.5 s tone, 0.5 s silence, 0.4 s tone, 0.3 s silence


class HungDisk:
    """A ``writer_factory``: real session writers whose token writes wait until ``answer()``."""

    def __init__(self) -> None:
        self.gate, self.entered = threading.Event(), threading.Event()
        self.writers: list[SessionWriter] = []

    def __call__(self, *args, **kwargs) -> SessionWriter:
        writer = SessionWriter(*args, **kwargs)
        real = writer.add_tokens

        def add_tokens(*a, **k) -> None:
            self.entered.set()
            assert self.gate.wait(30)
            real(*a, **k)

        writer.add_tokens = add_tokens  # type: ignore[method-assign]
        self.writers.append(writer)
        return writer

    def answer(self) -> None:
        self.gate.set()


def _start(fake_sd, wav_48k, tmp_path, disk: HungDisk, save_wait_s: float):
    _, src, _ = _setup(fake_sd, wav_48k, FakeModel())
    model = FakeModel()
    ctl = SessionController(
        sd=fake_sd,
        model_loader=lambda path, backend: model,
        writer_factory=disk,
        save_wait_s=save_wait_s,
        hang_s=3600,  # slow, not dead: never given up (tests/pipeline/test_transcript_saver_hang.py)
    )
    shown: list = []
    ctl.caption.connect(shown.append)
    results: list[SessionResult] = []
    ctl.session_finished.connect(results.append)
    cfg = SessionConfig(Path("m.gguf"), [src], 480, tmp_path / "notes", "srt", token_ms=80)
    assert ctl.start(cfg)  # returns at once: the file is opened and written on the saver's thread
    return ctl, shown, results


def _words(shown: list) -> list[str]:
    return [t.piece.strip() for u in shown for t in u.new_tokens]


def test_captions_wait_for_the_disk_and_the_window_does_not(qtbot, fake_sd, wav_48k, tmp_path) -> None:
    disk = HungDisk()
    ctl, shown, results = _start(fake_sd, wav_48k, tmp_path, disk, save_wait_s=3600)
    assert fake_sd.streams[-1].done.wait(5)
    qtbot.waitUntil(disk.entered.is_set, timeout=10000)  # the first words are being written; the disk hangs
    ctl.stop()  # the window's thread is free: Stop works while the disk hangs
    assert ctl.wait_idle(10000)  # the worker has decoded everything and ended
    QCoreApplication.sendPostedEvents(ctl)  # every update it sent has arrived
    assert ctl.state is SessionState.STOPPING and shown == []  # nothing shown that is not on disk
    with qtbot.waitSignal(ctl.session_finished, timeout=10000):
        disk.answer()
    [result] = results
    assert _words(shown) == result.summary.text.split() and shown[-1].final
    assert result.transcript is not None
    file_words = " ".join(c.text for c in parse("srt", result.transcript.read_text())).split()
    assert file_words == _words(shown)


def test_captions_held_too_long_are_shown_and_the_lag_counted_while_held(
    qtbot, fake_sd, wav_48k, tmp_path
) -> None:
    disk = HungDisk()
    ctl, shown, results = _start(fake_sd, wav_48k, tmp_path, disk, save_wait_s=3600)
    lags: list[int] = []
    ctl.stats.connect(lambda stats: lags.append(stats.lag_ms))
    assert fake_sd.streams[-1].done.wait(5)
    qtbot.waitUntil(disk.entered.is_set, timeout=10000)
    # All 1.7 s are captured and the engine keeps up, but the first word (at 0 ms) is not on
    # screen: the lag says so, instead of the engine's few hundred ms.
    qtbot.waitUntil(lambda: any(lag >= WAV_MS - 100 for lag in lags), timeout=10000)
    assert shown == []

    ctl._hold._wait_s = 0.0  # the hold gives up on the disk: captions go on without it
    qtbot.waitUntil(lambda: bool(shown), timeout=10000)
    assert not disk.gate.is_set()  # shown while the disk still hangs
    with qtbot.waitSignal(ctl.session_finished, timeout=10000):
        ctl.stop()
        disk.answer()
    [result] = results
    assert _words(shown) == result.summary.text.split()
    assert result.transcript is not None  # the file caught up when the disk answered


def test_the_delay_is_said_and_withdrawn(qtbot, fake_sd, wav_48k, tmp_path) -> None:
    disk = HungDisk()
    ctl, shown, _ = _start(fake_sd, wav_48k, tmp_path, disk, save_wait_s=0.0)
    unsaved: list[float] = []
    ctl.transcript_unsaved.connect(unsaved.append)
    qtbot.waitUntil(disk.entered.is_set, timeout=10000)
    with qtbot.waitSignal(ctl.transcript_unsaved, timeout=10000):  # after UNSAVED_NOTICE_S
        pass
    assert unsaved[0] >= 2.0 and shown
    with qtbot.waitSignal(ctl.session_finished, timeout=10000):
        ctl.stop()
        disk.answer()
    assert unsaved[-1] == 0.0  # caught up
