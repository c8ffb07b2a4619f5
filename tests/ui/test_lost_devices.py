"""LostDevices: capture's notices about a source that went away and came back, as banner lines."""

from __future__ import annotations

from captionist.ui.lost_devices import BannerChange, LostDevices


def _lost(name: str) -> str:
    return f"audio source {name!r} disappeared; waiting for it to come back"  # capture's wording


def test_a_lost_source_shows_until_it_is_back() -> None:
    lost = LostDevices()
    change = lost.on_notice(_lost("USB Mic"))
    assert change == BannerChange(show="Audio source 'USB Mic' disappeared; waiting for it to come back.")
    assert lost.on_notice(f"audio source {'USB Mic'!r} is back") == BannerChange(withdraw=change.show)
    assert lost.on_notice(f"audio source {'USB Mic'!r} is back") == BannerChange()  # already withdrawn


def test_names_with_quotes_and_two_sources_at_once() -> None:
    lost = LostDevices()
    odd = 'Bob\'s "Desk" Mic'
    a, b = lost.on_notice(_lost(odd)).show, lost.on_notice(_lost("Speakers (system audio)")).show
    assert a and "Desk" in a and b and "Speakers" in b
    assert lost.on_notice(f"audio source {'Speakers (system audio)'!r} is back").withdraw == b
    assert lost.on_notice(f"audio source {odd!r} is back").withdraw == a


def test_other_notices_and_a_finished_session_change_nothing() -> None:
    lost = LostDevices()
    assert lost.on_notice("transcription fell behind: skipped 1.0 s of audio") == BannerChange()
    lost.on_notice(_lost("USB Mic"))
    lost.clear()
    assert lost.on_notice(f"audio source {'USB Mic'!r} is back") == BannerChange()


def test_a_source_that_stopped_sending_shows_until_it_is_back() -> None:
    # capture's wording for an open source gone silent (a hung sound server)
    lost = LostDevices()
    change = lost.on_notice(
        "audio source 'Monitor of meeting' stopped sending audio; waiting for it to come back"
    )
    assert (
        change.show == "Audio source 'Monitor of meeting' stopped sending audio; waiting for it to come back."
    )
    assert lost.on_notice("audio source 'Monitor of meeting' is back").withdraw == change.show
