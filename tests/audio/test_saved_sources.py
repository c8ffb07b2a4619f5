"""The sources ticked last time are found again by id while the id still names the same device, by
name where PortAudio's index moved, and reported where they are not there."""

from __future__ import annotations

from captionist.audio.devices import Source
from captionist.audio.saved_sources import SavedSourceMatch, match_saved_sources


def src(id_: str, name: str) -> Source:
    return Source(id=id_, name=name, kind="input", hostapi="ALSA", channels=1, samplerate=48000.0)


TODAY = [
    src("0", "Built-in Mic"),
    src("1", "HDMI Capture"),
    src("2", "USB Headset"),
    src("pulse:a.monitor", "Monitor"),
]


def test_an_id_that_still_names_its_device_is_taken() -> None:
    assert match_saved_sources(TODAY, ["2"], {"2": "USB Headset"}) == SavedSourceMatch(["2"], [])


def test_a_device_whose_index_moved_is_found_by_its_name_not_by_its_old_index() -> None:
    # "1" was the headset's index; today it is the HDMI capture card's
    assert match_saved_sources(TODAY, ["1"], {"1": "USB Headset"}) == SavedSourceMatch(["2"], [])


def test_a_device_that_is_not_there_is_reported_by_name_and_not_replaced_by_its_index() -> None:
    today = [s for s in TODAY if s.name != "USB Headset"]
    names = {"1": "USB Headset", "pulse:a.monitor": "Monitor"}
    found = match_saved_sources(today, ["1", "pulse:a.monitor"], names)
    assert found == SavedSourceMatch(["pulse:a.monitor"], ["USB Headset"])


def test_settings_from_before_names_were_kept_take_ids_as_they_are() -> None:
    assert match_saved_sources(TODAY, ["1", "7"], {}) == SavedSourceMatch(["1"], ["7"])


def test_two_saved_ids_that_meet_on_one_device_tick_it_once() -> None:
    found = match_saved_sources(TODAY, ["2", "5"], {"2": "USB Headset", "5": "USB Headset"})
    assert found == SavedSourceMatch(["2"], ["USB Headset"])
    assert match_saved_sources(TODAY, [], {}) == SavedSourceMatch([], [])
