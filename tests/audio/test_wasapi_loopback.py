"""Windows system audio (``captionist.audio.wasapi_loopback``) against a fake PyAudioWPatch: the
listing, the stream contract ``SourceStream`` relies on, mixing with a microphone, and an output
unplugged mid-capture going through ``Capture``'s device-lost handling."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pytest

from captionist.audio import wasapi_loopback
from captionist.audio.capture import Capture, CaptureError, rms_dbfs
from captionist.audio.devices import Source, SourceBackend, list_sources, rediscover, system_audio_note
from captionist.audio.wasapi_loopback import (
    LoopbackInputStream,
    LoopbackUnavailable,
    list_loopback_sources,
    loopback_problem,
)
from tests.fakes.fake_pyaudiowpatch import FakePyAudioWPatch
from tests.fakes.fake_sounddevice import FakeSoundDevice


def _tone(rate: int, seconds: float, channels: int = 2, amp: float = 0.25) -> np.ndarray:
    t = np.arange(int(rate * seconds)) / rate
    mono = (amp * np.sin(2 * np.pi * 440.0 * t)).astype(np.float32)
    return np.repeat(mono[:, None], channels, axis=1)


def _missing() -> Any:
    raise LoopbackUnavailable("system audio capture needs PyAudioWPatch (No module named 'pyaudiowpatch')")


class _Opened:
    """An opener for ``Capture(openers=...)`` that keeps the streams it made."""

    def __init__(self, pa: FakePyAudioWPatch) -> None:
        self.streams: list[LoopbackInputStream] = []
        self._make = functools.partial(LoopbackInputStream, pyaudio=pa, watch_interval_s=0.005)

    def __call__(self, **kwargs: Any) -> LoopbackInputStream:
        stream = self._make(**kwargs)
        self.streams.append(stream)
        return stream


def _drain(cap: Capture) -> np.ndarray:
    out = []
    while (pcm := cap.read(0)) is not None:
        out.append(pcm)
    return np.concatenate(out) if out else np.zeros(0, np.float32)


def test_outputs_are_listed_as_system_audio_with_the_default_output_first() -> None:
    pa = FakePyAudioWPatch()
    pa.add_output("Headphones (USB)", rate=44100, channels=2)
    pa.add_output("Speakers (Realtek)", rate=48000, channels=2, default=True)
    sources = list_loopback_sources(pyaudio=pa)
    assert [s.label() for s in sources] == [
        "Speakers (Realtek) (system audio)",
        "Headphones (USB) (system audio)",
    ]
    first = sources[0]
    assert first.id == "wasapi-loopback:Speakers (Realtek)"
    assert (first.kind, first.backend, first.open_device) == ("loopback", SourceBackend.WASAPI_LOOPBACK, 1)
    assert (first.channels, first.samplerate, first.is_default) == (2, 48000.0, False)
    assert all(inst.terminated for inst in pa.instances)


def test_no_default_output_still_lists_the_others() -> None:
    pa = FakePyAudioWPatch()
    pa.add_output("HDMI (NVIDIA)")
    assert [s.name for s in list_loopback_sources(pyaudio=pa)] == ["HDMI (NVIDIA)"]


def test_list_sources_on_windows_appends_loopback_after_the_microphones(fake_sd: FakeSoundDevice) -> None:
    fake_sd.add_device("Microphone (USB)", rate=48000, channels=1, default=True)
    pa = FakePyAudioWPatch()
    pa.add_output("Speakers (Realtek)", default=True)
    sources = list_sources(
        fake_sd, pactl=None, platform="win32", system_sources=lambda: list_loopback_sources(pyaudio=pa)
    )
    assert [(s.label(), s.kind) for s in sources] == [
        ("Microphone (USB)", "input"),
        ("Speakers (Realtek) (system audio)", "loopback"),
    ]
    assert (
        list_sources(fake_sd, pactl=None, platform="linux", system_sources=lambda: 1 / 0)[0].kind == "input"
    )


def test_missing_library_leaves_the_list_without_loopback_and_says_so(
    fake_sd: FakeSoundDevice, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(wasapi_loopback, "import_pyaudiowpatch", _missing)
    fake_sd.add_device("Microphone (USB)", default=True)
    assert [s.kind for s in list_sources(fake_sd, pactl=None, platform="win32")] == ["input"]
    note = system_audio_note("win32", loopback_problem=lambda: loopback_problem(_missing))
    assert note is not None and "unavailable" in note and "PyAudioWPatch" in note
    assert "(system audio)" in (system_audio_note("win32", loopback_problem=lambda: None) or "")


def test_a_library_that_fails_to_start_is_unavailable_too() -> None:
    class Broken(FakePyAudioWPatch):
        def PyAudio(self) -> Any:  # noqa: N802
            raise OSError("Pa_Initialize failed")

    with pytest.raises(LoopbackUnavailable, match="Pa_Initialize failed"):
        list_loopback_sources(pyaudio=Broken())


def _loopback(pa: FakePyAudioWPatch, name: str = "Speakers (Realtek)") -> Source:
    return next(s for s in list_loopback_sources(pyaudio=pa) if s.name == name)


def test_loopback_mixes_with_the_microphone_at_16k(fake_sd: FakeSoundDevice) -> None:
    fake_sd.add_device("Mic", rate=16000, channels=1, audio=np.zeros(16000, np.float32))
    mic = list_sources(fake_sd, pactl=None, platform="linux")[0]
    pa = FakePyAudioWPatch()
    pa.add_output("Speakers (Realtek)", rate=48000, channels=2, audio=_tone(48000, 1.0), default=True)
    opened = _Opened(pa)
    cap = Capture([mic, _loopback(pa)], sd=fake_sd, openers={SourceBackend.WASAPI_LOOPBACK: opened})
    cap.start()
    stream = pa.streams[-1]
    assert (stream.kwargs["rate"], stream.channels, stream.blocksize) == (48000, 2, 960)
    assert stream.done.wait(5) and fake_sd.streams[-1].done.wait(5)
    cap.stop()
    pcm = _drain(cap)
    assert abs(pcm.size - 16000) <= 32
    # A 0.25-amplitude sine is -15 dBFS; the silent microphone adds nothing.
    assert rms_dbfs(pcm[1600:14400]) == pytest.approx(20 * np.log10(0.25 / np.sqrt(2)), abs=0.5)
    assert stream.closed and all(inst.terminated for inst in pa.instances)


def test_unplugged_output_is_lost_then_found_again_by_name() -> None:
    pa = FakePyAudioWPatch()
    pa.add_output("Headphones (USB)", rate=48000)
    pa.add_output("Speakers (Realtek)", rate=48000, default=True)
    opened = _Opened(pa)
    now = [0.0]
    cap = Capture(
        [_loopback(pa, "Headphones (USB)")],
        sd=FakeSoundDevice(),
        resolver=lambda lost: rediscover(lost, list_loopback_sources(pyaudio=pa)),
        reconnect_interval_s=1.0,
        clock=lambda: now[0],
        openers={SourceBackend.WASAPI_LOOPBACK: opened},
    )
    cap.start()
    pa.unplug("Headphones (USB)")
    assert opened.streams[0].lost.wait(5)
    cap.read(0)
    assert cap.poll_events() == ["audio source 'Headphones (USB)' disappeared; waiting for it to come back"]
    now[0] = 1.5
    cap.read(0)  # still gone: the resolver finds nothing
    assert cap.poll_events() == []
    pa.plug("Headphones (USB)")
    now[0] = 3.0
    cap.read(0)
    assert cap.poll_events() == ["audio source 'Headphones (USB)' is back"]
    fresh = pa.streams[-1]
    fresh.callback(np.full((1600 * 3, 2), 0.2, np.float32).tobytes(), 4800, {}, 0)
    out = cap.read(0)
    assert out is not None and out.size > 0
    cap.stop()
    assert not opened.streams[-1].lost.is_set()  # a stop is not a loss


def test_stop_is_not_reported_as_a_loss() -> None:
    pa = FakePyAudioWPatch()
    pa.add_output("Speakers (Realtek)", default=True)
    ended: list[bool] = []
    stream = LoopbackInputStream(
        device=0,
        samplerate=48000,
        channels=2,
        dtype="float32",
        blocksize=960,
        callback=lambda *a: None,
        finished_callback=lambda: ended.append(True),
        pyaudio=pa,
        watch_interval_s=0.005,
    )
    stream.start()
    stream.stop()
    stream.close()
    assert ended == [] and not stream.lost.is_set()


def test_opening_a_vanished_output_is_a_capture_error() -> None:
    pa = FakePyAudioWPatch()
    pa.add_output("Speakers (Realtek)", default=True)
    source = _loopback(pa)
    pa.unplug("Speakers (Realtek)")
    cap = Capture([source], sd=FakeSoundDevice(), openers={SourceBackend.WASAPI_LOOPBACK: _Opened(pa)})
    with pytest.raises(CaptureError, match="Invalid device"):
        cap.start()
    assert all(inst.terminated for inst in pa.instances)


def test_without_an_opener_the_backend_is_a_capture_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wasapi_loopback, "import_pyaudiowpatch", _missing)
    pa = FakePyAudioWPatch()
    pa.add_output("Speakers (Realtek)", default=True)
    cap = Capture([_loopback(pa)], sd=FakeSoundDevice())  # the default opener: the library is missing
    with pytest.raises(CaptureError, match="PyAudioWPatch"):
        cap.start()


def test_a_surround_output_opens_at_its_mix_format_and_keeps_the_centre_speaker() -> None:
    centre = np.zeros((48000, 6), np.float32)
    centre[:, 2] = _tone(48000, 1.0, channels=1, amp=0.6)[:, 0]  # speech sits in the centre channel
    pa = FakePyAudioWPatch()
    pa.add_output("Speakers (5.1)", rate=48000, channels=6, audio=centre, default=True)
    source = _loopback(pa, "Speakers (5.1)")
    assert source.channels == 6
    cap = Capture([source], sd=FakeSoundDevice(), openers={SourceBackend.WASAPI_LOOPBACK: _Opened(pa)})
    cap.start()
    stream = pa.streams[-1]
    assert stream.kwargs["channels"] == 6  # WASAPI shared mode: the mix format's channel count
    assert stream.done.wait(5)
    cap.stop()
    pcm = _drain(cap)
    assert rms_dbfs(pcm[1600:14400]) == pytest.approx(20 * np.log10(0.1 / np.sqrt(2)), abs=0.5)
