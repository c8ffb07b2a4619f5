"""macOS system audio through ScreenCaptureKit, against a fake of the pyobjc layer: listing,
planar and interleaved buffers, mixing with a microphone at 16 kHz, a refused permission, and a
permission withdrawn mid-capture going through ``Capture``'s device-lost handling."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from captionist.audio.capture import Capture, CaptureError, rms_dbfs
from captionist.audio.devices import SourceBackend, list_sources, rediscover, system_audio_note
from captionist.audio.screencapturekit_audio import (
    BLACKHOLE_NOTE,
    SCREENCAPTUREKIT_NOTE,
    list_screencapturekit_sources,
    macos_system_audio_note,
    screencapturekit_available,
)
from captionist.audio.screencapturekit_stream import ScreenCaptureKitInputStream
from tests.fakes.fake_screencapturekit import FakeScreenCaptureKit
from tests.fakes.fake_sounddevice import FakeSoundDevice


def _tone(seconds: float, rate: int = 48000, amp: float = 0.25) -> np.ndarray:
    t = np.arange(int(rate * seconds)) / rate
    left = amp * np.sin(2 * np.pi * 440.0 * t)
    return np.stack([left, 0.5 * left], axis=1).astype(np.float32)  # the channels differ


def _drain(cap: Capture) -> np.ndarray:
    out = []
    while (pcm := cap.read(0)) is not None:
        out.append(pcm)
    return np.concatenate(out) if out else np.zeros(0, np.float32)


def _source():
    return list_screencapturekit_sources(available=lambda: True)[0]


def _openers(api: FakeScreenCaptureKit) -> dict:
    return {SourceBackend.SCREENCAPTUREKIT: functools.partial(ScreenCaptureKitInputStream, api=api)}


def test_one_all_apps_source_where_screencapturekit_works() -> None:
    source = _source()
    assert source.label() == "All apps (system audio)"
    assert (source.backend, source.kind, source.samplerate, source.channels) == (
        SourceBackend.SCREENCAPTUREKIT,
        "loopback",
        48000.0,
        2,
    )
    assert list_screencapturekit_sources(available=lambda: False) == []
    assert not screencapturekit_available("darwin", release="12.6")
    assert not screencapturekit_available("linux")


def test_the_note_explains_the_permission_or_names_blackhole() -> None:
    assert macos_system_audio_note(lambda: True) == SCREENCAPTUREKIT_NOTE
    assert "Screen & System Audio Recording" in SCREENCAPTUREKIT_NOTE and "restart" in SCREENCAPTUREKIT_NOTE
    assert macos_system_audio_note(lambda: False) == BLACKHOLE_NOTE
    assert system_audio_note("darwin") == BLACKHOLE_NOTE  # no ScreenCaptureKit on this machine


def test_list_sources_on_macos_appends_all_apps(fake_sd: FakeSoundDevice) -> None:
    fake_sd.add_device("MacBook Pro Microphone", default=True)
    sources = list_sources(fake_sd, pactl=None, platform="darwin", system_sources=lambda: [_source()])
    assert [s.label() for s in sources] == ["MacBook Pro Microphone", "All apps (system audio)"]


@pytest.mark.parametrize("planar", [True, False])
def test_buffers_become_frames_by_channels(planar: bool) -> None:
    audio = _tone(0.1)
    api = FakeScreenCaptureKit(audio=audio, planar=planar)
    blocks: list[np.ndarray] = []
    stream = ScreenCaptureKitInputStream(
        device=None,
        samplerate=48000,
        channels=2,
        dtype="float32",
        blocksize=960,
        callback=lambda block, frames, *_: blocks.append(block.copy()),
        api=api,
    )
    stream.start()
    assert api.streams[-1].done.wait(5)
    stream.close()
    np.testing.assert_array_equal(np.concatenate(blocks), audio)
    assert api.stops == 1  # close after stop does not stop twice


def test_all_apps_mixes_with_the_microphone_at_16k(fake_sd: FakeSoundDevice) -> None:
    fake_sd.add_device("Mic", rate=16000, channels=1, audio=np.zeros(16000, np.float32))
    mic = list_sources(fake_sd, pactl=None, platform="linux")[0]
    api = FakeScreenCaptureKit(audio=_tone(1.0))
    cap = Capture([mic, _source()], sd=fake_sd, openers=_openers(api))
    cap.start()
    assert api.streams[-1].done.wait(5) and fake_sd.streams[-1].done.wait(5)
    cap.stop()
    pcm = _drain(cap)
    assert abs(pcm.size - 16000) <= 32
    expected = 20 * np.log10(0.75 * 0.25 / np.sqrt(2))  # the mean of a full and a half-amplitude channel
    assert rms_dbfs(pcm[1600:14400]) == pytest.approx(expected, abs=0.5)


def test_a_refused_permission_is_a_capture_error_that_says_so() -> None:
    cap = Capture([_source()], sd=FakeSoundDevice(), openers=_openers(FakeScreenCaptureKit(denied=True)))
    with pytest.raises(CaptureError, match="All apps.*refused screen and system audio recording"):
        cap.start()


def test_a_withdrawn_permission_is_lost_then_back_when_allowed_again() -> None:
    api = FakeScreenCaptureKit()
    now = [0.0]
    cap = Capture(
        [_source()],
        sd=FakeSoundDevice(),
        resolver=lambda lost: rediscover(lost, [_source()]),
        reconnect_interval_s=1.0,
        clock=lambda: now[0],
        openers=_openers(api),
    )
    cap.start()
    api.revoke()  # on_stopped runs on this thread, like the fake's delivery would on its queue
    cap.read(0)
    assert cap.poll_events() == ["audio source 'All apps' disappeared; waiting for it to come back"]
    now[0] = 1.5
    cap.read(0)  # still refused: reopening fails quietly
    assert cap.poll_events() == []
    api.denied = False
    now[0] = 3.0
    cap.read(0)
    assert cap.poll_events() == ["audio source 'All apps' is back"]
    cap.stop()
