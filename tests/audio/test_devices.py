from __future__ import annotations

import pytest

from captionist.audio.devices import DeviceNotFound, find_source, format_device_list, list_sources
from tests.fakes.fake_sounddevice import FakeSoundDevice

PACTL = (
    "0\talsa_input.usb-mic\tmodule-alsa-card.c\ts16le 2ch 44100Hz\tSUSPENDED\n"
    "1\tnull.monitor\tmodule-null-sink.c\tfloat32le 2ch 48000Hz\tIDLE\n"
)


def short_pactl(*args: str) -> str | None:
    """An older pactl: the short listing, and no default source."""
    return PACTL if args == ("list", "sources") else None


def _sd() -> FakeSoundDevice:
    sd = FakeSoundDevice(hostapis=("ALSA",))
    sd.add_device("HDA Intel PCH: ALC257 Analog (hw:0,0)", rate=44100, channels=2)
    sd.add_device("pulse", rate=44100, channels=32)
    sd.add_device("default", rate=44100, channels=32, default=True)
    return sd


def test_lists_inputs_and_pulse_monitor_sources() -> None:
    sources = list_sources(_sd(), pactl=short_pactl, platform="linux")
    ids = [s.id for s in sources]
    assert ids == ["0", "pulse:alsa_input.usb-mic", "pulse:null.monitor"]  # no ALSA pseudo devices
    monitor = sources[-1]
    assert monitor.kind == "monitor" and monitor.name == "Monitor of null"
    assert monitor.open_device == 1 and monitor.env == {"PULSE_SOURCE": "null.monitor"}
    assert [s.is_default for s in sources] == [False, True, False]  # a microphone, not a monitor


def test_no_pulse_sources_without_pulse_device_or_off_linux() -> None:
    sd = FakeSoundDevice()
    sd.add_device("Mic", rate=48000)
    assert [s.id for s in list_sources(sd, pactl=short_pactl, platform="linux")] == ["0"]
    assert len(list_sources(_sd(), pactl=short_pactl, platform="darwin")) == 3


def test_windows_loopback_is_system_audio() -> None:
    sd = FakeSoundDevice(hostapis=("MME", "Windows WASAPI"))
    sd.add_device("Speakers (Realtek) [Loopback]", rate=48000, channels=2, hostapi=1)
    sd.add_device("Microphone (USB)", rate=48000, hostapi=1)
    kinds = [s.kind for s in list_sources(sd, pactl=None, platform="win32")]
    assert kinds == ["loopback", "input"]


def test_find_by_id_substring_and_default() -> None:
    sources = list_sources(_sd(), pactl=short_pactl, platform="linux")
    assert find_source("pulse:null.monitor", sources).name == "Monitor of null"
    assert find_source("NULL", sources).id == "pulse:null.monitor"
    assert find_source("alc257", sources).id == "0"
    assert find_source("alsa_input.usb-mic", sources).id == "pulse:alsa_input.usb-mic"
    assert find_source(None, sources).id == "pulse:alsa_input.usb-mic"
    plain = list_sources(_sd(), pactl=None, platform="linux")
    assert find_source("Default input (ALSA)", plain).id == "2"  # exact name wins over substrings
    with pytest.raises(DeviceNotFound, match="no audio source matches 'nothing'"):
        find_source("nothing", sources)
    with pytest.raises(DeviceNotFound, match="no audio input devices"):
        find_source(None, [])


def test_format_device_list_marks_default_and_ids() -> None:
    text = format_device_list(_sd(), pactl=short_pactl, platform="linux")
    lines = text.splitlines()
    assert lines[1].startswith("*") and "pulse:alsa_input.usb-mic" in lines[1]
    assert "pulse:null.monitor  Monitor of null (system audio)" in text
    assert lines[-1].startswith("# ")


LONG_PACTL = """Source #0
\tState: SUSPENDED
\tName: alsa_output.pci-0000_00_1f.3.analog-stereo.monitor
\tDescription: Monitor of Built-in Audio Analog Stereo
\tDriver: module-alsa-card.c
Source #1
\tState: RUNNING
\tName: alsa_input.pci-0000_00_1f.3.analog-stereo
\tDescription: Built-in Audio Analog Stereo
\tDriver: module-alsa-card.c
Source #2
\tName: alsa_input.usb-Blue_Yeti-00.analog-stereo
\tDescription: Yeti Stereo Microphone Analog Stereo
"""
INFO = (
    "Server Name: pulseaudio\nDefault Sink: alsa_output.pci-0000_00_1f.3.analog-stereo\n"
    "Default Source: alsa_input.usb-Blue_Yeti-00.analog-stereo\n"
)


def pactl(*args: str) -> str | None:
    return {("list", "sources"): LONG_PACTL, ("info",): INFO}.get(args)


def test_sources_are_presented_by_what_they_are() -> None:
    sources = list_sources(_sd(), pactl=pactl, platform="linux")
    assert [(s.label(), s.kind) for s in sources] == [
        ("HDA Intel PCH: ALC257 Analog (hw:0,0)", "input"),
        ("Monitor of Built-in Audio Analog Stereo (system audio)", "monitor"),
        ("Built-in Audio Analog Stereo", "input"),
        ("Yeti Stereo Microphone Analog Stereo", "input"),
    ]
    (default,) = [s for s in sources if s.is_default]
    assert default.id == "pulse:alsa_input.usb-Blue_Yeti-00.analog-stereo"  # the server's default mic
    assert default.env == {"PULSE_SOURCE": "alsa_input.usb-Blue_Yeti-00.analog-stereo"}


def test_a_monitor_as_server_default_is_not_ticked_first() -> None:
    def monitor_default(*args: str) -> str | None:
        if args == ("info",):
            return "Default Source: alsa_output.pci-0000_00_1f.3.analog-stereo.monitor\n"
        return pactl(*args)

    sources = list_sources(_sd(), pactl=monitor_default, platform="linux")
    assert [s.id for s in sources if s.is_default] == ["pulse:alsa_input.pci-0000_00_1f.3.analog-stereo"]


def test_without_pulseaudio_the_alsa_pseudo_devices_say_what_they_are() -> None:
    sources = list_sources(_sd(), pactl=lambda *a: None, platform="linux")
    assert [s.name for s in sources] == [
        "HDA Intel PCH: ALC257 Analog (hw:0,0)",
        "Default input (PulseAudio)",
        "Default input (ALSA)",
    ]
    assert [s.id for s in sources if s.is_default] == ["2"]


def test_first_run_ticks_the_default_microphone(qtbot) -> None:
    from captionist.ui.source_panel import SourcePanel

    panel = SourcePanel()
    qtbot.addWidget(panel)
    panel.set_sources(list_sources(_sd(), pactl=pactl, platform="linux"), selected_ids=[])
    assert [s.name for s in panel.selected()] == ["Yeti Stereo Microphone Analog Stereo"]
    panel.set_sources(list_sources(_sd(), pactl=pactl, platform="linux"), selected_ids=["2"])  # old "default"
    assert [s.name for s in panel.selected()] == ["Yeti Stereo Microphone Analog Stereo"]
