"""A writer call the disk holds can be given up, and cleaned up after if the disk ever answers."""

from __future__ import annotations

import errno
import threading

import pytest

from captionist.pipeline.disk_thread import DiskNotAnswering, DiskThread


def test_calls_return_their_result_or_raise_their_exception() -> None:
    disk = DiskThread()
    assert disk.call(lambda: threading.current_thread().name, 10) == "captionist-disk"
    with pytest.raises(FileNotFoundError):
        disk.call(lambda: open("/nonexistent/x"), 10)


@pytest.mark.parametrize("raises", [False, True])
def test_a_held_call_is_given_up_and_cleaned_up_when_it_returns(raises: bool) -> None:
    gate, cleaned = threading.Event(), threading.Event()
    got: list = []

    def held() -> str:
        assert gate.wait(30)
        if raises:
            raise OSError("the share came back with an error")
        return "the writer"

    disk = DiskThread()
    with pytest.raises(DiskNotAnswering):
        disk.call(held, 0.05)
    disk.abandon(lambda result: (got.append(result), cleaned.set()))
    assert not cleaned.is_set()  # nothing to clean while the disk holds the call
    gate.set()
    assert cleaned.wait(10)
    assert got == [None if raises else "the writer"]


def test_bounded_names_the_path_whose_disk_does_not_answer(tmp_path) -> None:
    from captionist.pipeline.disk_thread import DiskTimeout, bounded

    gate = threading.Event()
    assert bounded(lambda: 42, tmp_path) == 42
    with pytest.raises(DiskTimeout) as caught:
        bounded(lambda: gate.wait(30), tmp_path / "talk.srt", 0.05)
    gate.set()
    assert str(caught.value) == f"{tmp_path / 'talk.srt'}: its disk is not answering"
    assert isinstance(caught.value, OSError) and caught.value.errno == errno.ETIMEDOUT
