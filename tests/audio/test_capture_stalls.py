"""An open microphone or monitor that stops sending audio, as one does while its sound server hangs
(``captionist.audio.capture``): it is said, and so is its return; the window shows it until then
(``ui/lost_devices.py``). Its time is not made up: neither silence nor an outage."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from captionist.audio.capture import STALL_S, Capture
from captionist.audio.devices import Source, SourceBackend
from tests.audio.clocked_capture import BLOCK_S, Clock, capture, started
from tests.fakes.fake_sounddevice import FakeSoundDevice

STOPPED = "audio source 'Speakers' stopped sending audio; waiting for it to come back"
BACK = "audio source 'Speakers' is back"


def test_a_monitor_that_stops_sending_is_said_and_so_is_its_return(fake_sd: FakeSoundDevice) -> None:
    run = started(fake_sd, SourceBackend.PORTAUDIO)
    cap = run.cap
    run.nothing(STALL_S + 1)  # a device may take a while to send its first block: not a stall
    assert cap.poll_events() == []
    run.play(1.0)
    run.nothing(STALL_S - 0.2)
    assert cap.poll_events() == []  # not yet
    run.nothing(0.3)
    assert cap.poll_events() == [STOPPED]
    run.nothing(3.0)
    assert cap.poll_events() == []  # said once
    run.play(1.0)
    assert cap.poll_events() == [BACK]
    cap.stop()
    run.read()
    assert cap.poll_outages() == []
    assert run.audio().size == pytest.approx(2 * 16000, abs=2)  # nothing made up


def test_blocks_that_come_while_a_read_waits_count(fake_sd: FakeSoundDevice) -> None:
    # a live read finds the queue empty, waits, and drains the block that came meanwhile: so the
    # queue is empty whenever the devices are looked at, and only the callback's counts show life
    clock = Clock()
    cap = capture(fake_sd, SourceBackend.PORTAUDIO, clock)
    cap.start()
    stream = fake_sd.streams[-1]

    class BlockWhileWaiting:
        def wait(self, _timeout: float) -> bool:
            clock.t += BLOCK_S
            stream.push(np.zeros((960, 2), np.float32))
            return False

    cap._idle = BlockWhileWaiting()  # type: ignore[assignment]
    got = [cap.read(0.05) for _ in range(400)]  # 8 s
    assert sum(pcm.size for pcm in got if pcm is not None) / 16000 == pytest.approx(8.0, abs=0.05)
    assert cap.poll_events() == []

    for _ in range(round((STALL_S + 0.5) / 0.05)):  # and then the server hangs
        clock.t += 0.05
        cap.read(0)
    assert cap.poll_events() == [STOPPED]


def test_one_source_stalled_beside_another_is_said_and_the_other_goes_on(fake_sd: FakeSoundDevice) -> None:
    clock = Clock()
    fake_sd.add_device("Mic", rate=16000, channels=1)
    speakers = replace(capture(fake_sd, SourceBackend.PORTAUDIO, clock).sources[0], open_device=1)
    mic = Source(id="mic", name="Mic", kind="input", hostapi="ALSA", channels=1, samplerate=16000,
                 open_device=0)  # fmt: skip
    cap = Capture([mic, speakers], sd=fake_sd, clock=clock)
    cap.start()
    mic_stream, out_stream = fake_sd.streams[-2], fake_sd.streams[-1]
    out = []
    for step in range(300):
        clock.t += BLOCK_S
        mic_stream.push(np.full(320, 0.1, np.float32))
        if step < 50:
            out_stream.push(np.zeros((960, 2), np.float32))
        while (pcm := cap.read(0)) is not None:
            out.append(pcm)
    assert cap.poll_events() == [STOPPED]
    cap.stop()
    while (pcm := cap.read(0)) is not None:
        out.append(pcm)
    assert cap.poll_outages() == []
    assert np.concatenate(out).size / 16000 == pytest.approx(6.0, abs=0.05)  # the mic's time, whole


def test_system_audio_paced_by_the_clock_never_stalls(fake_sd: FakeSoundDevice) -> None:
    run = started(fake_sd, SourceBackend.WASAPI_LOOPBACK)
    cap = run.cap
    run.play(1.0)
    run.nothing(10.0)
    assert cap.poll_events() == [] and cap.poll_outages() == []
