from __future__ import annotations

import pytest

from captionist.audio.devices import DeviceNotFound, find_source, format_device_list, list_sources
from tests.fakes.fake_sounddevice import FakeSoundDevice

PACTL = (
    "0\talsa_input.usb-mic\tmodule-alsa-card.c\ts16le 2ch 44100Hz\tSUSPENDED\n"
    "1\tnull.monitor\tmodule-null-sink.c\tfloat32le 2ch 48000Hz\tIDLE\n"
)


def _sd() -> FakeSoundDevice:
    sd = FakeSoundDevice(hostapis=("ALSA",))
    sd.add_device("HDA Intel PCH: ALC257 Analog (hw:0,0)", rate=44100, channels=2)
    sd.add_device("pulse", rate=44100, channels=32)
    sd.add_device("default", rate=44100, channels=32, default=True)
    return sd


def test_lists_inputs_and_pulse_monitor_sources() -> None:
    sources = list_sources(_sd(), pactl=lambda: PACTL, platform="linux")
    ids = [s.id for s in sources]
    assert ids == ["0", "1", "2", "pulse:alsa_input.usb-mic", "pulse:null.monitor"]
    monitor = sources[-1]
    assert monitor.kind == "monitor" and monitor.name == "Monitor of null"
    assert monitor.open_device == 1 and monitor.env == {"PULSE_SOURCE": "null.monitor"}
    assert [s.is_default for s in sources] == [False, False, True, False, False]


def test_no_pulse_sources_without_pulse_device_or_off_linux() -> None:
    sd = FakeSoundDevice()
    sd.add_device("Mic", rate=48000)
    assert [s.id for s in list_sources(sd, pactl=lambda: PACTL, platform="linux")] == ["0"]
    assert len(list_sources(_sd(), pactl=lambda: PACTL, platform="darwin")) == 3


def test_windows_loopback_is_system_audio() -> None:
    sd = FakeSoundDevice(hostapis=("MME", "Windows WASAPI"))
    sd.add_device("Speakers (Realtek) [Loopback]", rate=48000, channels=2, hostapi=1)
    sd.add_device("Microphone (USB)", rate=48000, hostapi=1)
    kinds = [s.kind for s in list_sources(sd, pactl=None, platform="win32")]
    assert kinds == ["loopback", "input"]


def test_find_by_id_substring_and_default() -> None:
    sources = list_sources(_sd(), pactl=lambda: PACTL, platform="linux")
    assert find_source("2", sources).name == "default"
    assert find_source("NULL", sources).id == "pulse:null.monitor"
    assert find_source("alc257", sources).id == "0"
    assert find_source("pulse", sources).name == "pulse"  # exact name wins over substring matches
    assert find_source(None, sources).is_default
    with pytest.raises(DeviceNotFound, match="no audio source matches 'nothing'"):
        find_source("nothing", sources)
    with pytest.raises(DeviceNotFound, match="no audio input devices"):
        find_source(None, [])


def test_format_device_list_marks_default_and_ids() -> None:
    text = format_device_list(_sd(), pactl=lambda: PACTL, platform="linux")
    lines = text.splitlines()
    assert lines[2].startswith("*") and "default" in lines[2]
    assert "pulse:null.monitor  Monitor of null (system audio)" in text
    assert lines[-1].startswith("# ")
