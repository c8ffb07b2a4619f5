"""Captions wait for the transcript file, but never for long, and the lag counts them while they wait."""

from __future__ import annotations

from captionist.pipeline.caption_hold import CaptionHold
from captionist.pipeline.lag import samples_of
from tests.fakes.caption_updates import UpdateMaker


def _hold(wait_s: float = 3600.0, notice_s: float = 3600.0) -> tuple[CaptionHold, list, list]:
    hold = CaptionHold(wait_s, notice_s, tick_ms=1)
    shown: list = []
    unsaved: list[float] = []
    hold.show.connect(shown.append)
    hold.unsaved.connect(unsaved.append)
    return hold, shown, unsaved


def test_updates_are_shown_in_order_once_saved(qtbot) -> None:
    hold, shown, unsaved = _hold()
    make = UpdateMaker()
    updates = [make.make([" a"]), make.make([" b"]), make.make([" c"])]
    assert [hold.arrive(u, samples_of(1000)) for u in updates] == [1, 2, 3]
    assert shown == []
    hold.saved(2)
    assert shown == updates[:2]
    hold.saved(3)
    assert shown == updates and unsaved == []


def test_the_screen_is_current_up_to_the_first_word_that_waits(qtbot) -> None:
    hold, _, _ = _hold()
    make = UpdateMaker()
    assert hold.shown_through() is None  # nothing waits: the lag is the engine's
    first = make.make([" a", " b"])  # words at 80 and 160 ms
    hold.arrive(first, samples_of(700))
    assert hold.shown_through() == samples_of(80)
    hold.arrive(make.make([" c"]), samples_of(900))
    hold.saved(1)
    assert hold.shown_through() == samples_of(700)  # its word came before the last arrival
    hold.saved(2)
    hold.arrive(make.gap(900, 2000), samples_of(1200))
    assert hold.shown_through() == samples_of(900)  # a gap: as far as the update before it
    hold.saved(3)
    hold.arrive(make.make([], ends=[0]), samples_of(1500))
    assert hold.shown_through() == samples_of(1500)  # only an end of utterance: nothing is missing


def test_an_update_the_disk_holds_too_long_is_shown_and_the_delay_said(qtbot) -> None:
    hold, shown, unsaved = _hold(wait_s=0.0, notice_s=0.0)
    make = UpdateMaker()
    update = make.make([" late"])
    hold.arrive(update, samples_of(500))
    qtbot.waitUntil(lambda: shown == [update] and bool(unsaved))
    assert all(s > 0.0 for s in unsaved)  # behind, however little: 0.0 would mean caught up
    hold.saved(1)  # the file has caught up
    assert unsaved[-1] == 0.0
    count = len(unsaved)
    qtbot.waitUntil(lambda: not hold._timer.isActive())  # nothing waits: the timer rests
    assert len(unsaved) == count


def test_a_short_delay_is_not_reported(qtbot) -> None:
    hold, shown, unsaved = _hold(wait_s=0.0, notice_s=3600.0)
    make = UpdateMaker()
    hold.arrive(make.make([" a"]), 0)
    qtbot.waitUntil(lambda: len(shown) == 1)
    hold.saved(1)
    assert unsaved == []  # below notice_s: neither "behind" nor "caught up" is said


def test_release_all_shows_what_waits(qtbot) -> None:
    hold, shown, _ = _hold()
    make = UpdateMaker()
    updates = [make.make([" a"]), make.make([" b"])]
    for u in updates:
        hold.arrive(u, 0)
    hold.release_all()
    assert shown == updates and hold.shown_through() is None
