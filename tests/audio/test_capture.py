from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import soundfile

from captionist.audio.capture import Capture, CaptureError, Outage, OutageKind, rms_dbfs
from captionist.audio.devices import Source
from captionist.audio.mixer import Mixer
from tests.conftest import speech_like
from tests.fakes.fake_sounddevice import FakeSoundDevice
from tests.fakes.stuck_import import wait_until_answered


def _source(sd: FakeSoundDevice, index: int) -> Source:
    d = sd.devices[index]
    return Source(
        id=str(index),
        name=d.name,
        kind="input",
        hostapi="ALSA",
        channels=d.channels,
        samplerate=d.rate,
        open_device=index,
    )


def _drain(cap: Capture) -> np.ndarray:
    out = []
    while (pcm := cap.read(0)) is not None:
        out.append(pcm)
    return np.concatenate(out) if out else np.zeros(0, np.float32)


def test_wav_replayed_through_callback_is_resampled_to_16k_mono(
    fake_sd: FakeSoundDevice, wav_48k: Path
) -> None:
    audio, rate = soundfile.read(wav_48k, dtype="float32")
    fake_sd.add_device("USB Mic", rate=rate, channels=2, audio=audio)
    cap = Capture([_source(fake_sd, 0)], sd=fake_sd)
    cap.start()
    stream = fake_sd.streams[-1]
    assert stream.samplerate == 48000 and stream.channels == 2 and stream.blocksize == 960
    assert stream.done.wait(5)
    cap.stop()
    pcm = _drain(cap)
    assert pcm.dtype == np.float32
    assert abs(pcm.size - len(audio) // 3) <= 2
    # The tone survives resampling: compare loudness of the voiced and silent parts.
    assert rms_dbfs(pcm[1600:6400]) == pytest.approx(rms_dbfs(audio[:24000, 0]), abs=0.5)
    assert rms_dbfs(pcm[9600:14400]) < -80
    assert cap.read(0) is None


def test_levels_and_silence_tracking(fake_sd: FakeSoundDevice) -> None:
    fake_sd.add_device("Mic", rate=16000, channels=1)
    cap = Capture([_source(fake_sd, 0)], sd=fake_sd)
    cap.start()
    stream = fake_sd.streams[-1]
    stream.done.wait(5)
    stream.push(speech_like(16000, [(0.2, True)], amp=0.1))
    assert cap.read(0) is not None
    assert cap.levels()["0"] == pytest.approx(20 * math.log10(0.1 / math.sqrt(2)), abs=0.3)
    assert cap.silent_seconds("0") == 0
    for _ in range(3):
        stream.push(np.zeros(16000, np.float32))
        cap.read(0)
    assert cap.silent_seconds("0") == pytest.approx(3.0)
    assert cap.levels()["0"] == -math.inf
    cap.stop()


def test_bounded_queue_counts_overruns_instead_of_growing(fake_sd: FakeSoundDevice) -> None:
    fake_sd.add_device("Mic", rate=16000, channels=1)
    cap = Capture([_source(fake_sd, 0)], sd=fake_sd, queue_seconds=0.1, block_ms=20)  # 5 blocks
    cap.start()
    stream = fake_sd.streams[-1]
    for _ in range(8):
        stream.push(np.full(320, 0.1, np.float32))
    assert cap.overruns() == 3
    assert cap.read(0).size == 5 * 320
    cap.stop()


@pytest.mark.parametrize("rate", [16000, 48000])
def test_blocks_a_full_queue_dropped_come_out_as_marked_silence(fake_sd: FakeSoundDevice, rate: int) -> None:
    # the consumer stalls (a model loading): the queue fills, later blocks are dropped; what comes
    # out keeps the real length, with silence where the dropped blocks were, and says where that is
    fake_sd.add_device("Mic", rate=rate, channels=1)
    cap = Capture([_source(fake_sd, 0)], sd=fake_sd, queue_seconds=0.1, block_ms=20)  # 5 blocks
    cap.start()
    stream = fake_sd.streams[-1]
    block = rate // 50
    for i in range(8):
        stream.push(np.full(block, 0.1 * (i + 1), np.float32))
    got = [cap.read(0)]
    assert cap.poll_outages() == []  # nothing after the dropped blocks yet
    stream.push(np.full(block, 0.9, np.float32))
    stream.push(np.full(block, 0.9, np.float32))
    cap.stop()
    got.append(_drain(cap))
    pcm = np.concatenate([g for g in got if g is not None])
    assert pcm.size == 10 * 320 and cap.captured_samples() == 10 * 320
    [outage] = cap.poll_outages()
    assert outage == Outage(at=5 * 320, samples=3 * 320, kind=OutageKind.DROPPED)
    edge = 0 if rate == 16000 else 40  # the resampler smooths a few samples at each edge
    assert np.allclose(pcm[5 * 320 + edge : 8 * 320 - edge], 0, atol=2e-3)
    assert np.allclose(pcm[4 * 320 + edge : 5 * 320 - edge], 0.5, atol=1e-3)  # block 5 kept its place
    assert np.allclose(pcm[8 * 320 + edge : 10 * 320 - edge], 0.9, atol=1e-3)  # and the later ones theirs


def test_dropped_stretches_of_several_sources_are_one_outage(fake_sd: FakeSoundDevice) -> None:
    fake_sd.add_device("Mic", rate=16000, channels=1)
    fake_sd.add_device("Monitor of speakers", rate=16000, channels=1)
    cap = Capture([_source(fake_sd, 0), _source(fake_sd, 1)], sd=fake_sd, queue_seconds=0.1, block_ms=20)
    cap.start()
    mic, system = fake_sd.streams[-2], fake_sd.streams[-1]
    for _ in range(7):
        mic.push(np.full(320, 0.1, np.float32))  # 2 dropped
    for _ in range(8):
        system.push(np.full(320, 0.1, np.float32))  # 3 dropped
    assert cap.read(0).size == 5 * 320
    mic.push(np.full(320, 0.1, np.float32))
    system.push(np.full(320, 0.1, np.float32))
    assert cap.read(0).size == 3 * 320  # the mic is one block short: the mixer waits (skew)
    assert cap.poll_outages() == [Outage(at=5 * 320, samples=3 * 320, kind=OutageKind.DROPPED)]
    cap.stop()


def test_open_failure_is_a_clear_error(fake_sd: FakeSoundDevice) -> None:
    fake_sd.add_device("Mic", rate=44100)
    src = Source(
        id="0", name="Mic", kind="input", hostapi="ALSA", channels=1, samplerate=48000, open_device=0
    )
    with pytest.raises(CaptureError, match="cannot open 'Mic': Invalid sample rate"):
        Capture([src], sd=fake_sd).start()


def test_pulse_source_env_is_set_only_while_opening(fake_sd: FakeSoundDevice, monkeypatch) -> None:
    monkeypatch.delenv("PULSE_SOURCE", raising=False)
    fake_sd.add_device("pulse", rate=44100, channels=2)
    src = Source(
        id="pulse:null.monitor",
        name="Monitor of null",
        kind="monitor",
        hostapi="PulseAudio",
        channels=2,
        samplerate=44100,
        open_device=0,
        env={"PULSE_SOURCE": "null.monitor"},
    )
    cap = Capture([src], sd=fake_sd)
    cap.start()
    assert fake_sd.streams[-1].env_at_open == {"PULSE_SOURCE": "null.monitor"}
    import os

    assert "PULSE_SOURCE" not in os.environ
    cap.stop()


def test_device_loss_and_recovery(fake_sd: FakeSoundDevice) -> None:
    fake_sd.add_device("USB Mic", rate=16000, channels=1)
    now = [0.0]
    cap = Capture([_source(fake_sd, 0)], sd=fake_sd, reconnect_interval_s=1.0, clock=lambda: now[0])
    cap.start()
    fake_sd.disconnect("USB Mic")
    cap.read(0)
    assert cap.poll_events() == ["audio source 'USB Mic' disappeared; waiting for it to come back"]
    now[0] = 1.5
    cap.read(0)  # still gone: reopen fails quietly
    assert cap.poll_events() == []
    fake_sd.reconnect("USB Mic")
    now[0] = 3.0
    cap.read(0)
    assert cap.poll_events() == ["audio source 'USB Mic' is back"]
    fake_sd.streams[-1].push(np.full(1600, 0.2, np.float32))
    assert cap.read(0).size == 1600
    cap.stop()


def test_time_without_any_source_is_an_outage_after_the_audio_before_it(fake_sd: FakeSoundDevice) -> None:
    fake_sd.add_device("USB Mic", rate=48000, channels=1)
    now = [10.0]
    cap = Capture([_source(fake_sd, 0)], sd=fake_sd, reconnect_interval_s=1.0, clock=lambda: now[0])
    cap.start()
    fake_sd.streams[-1].push(np.full(4800, 0.2, np.float32))  # 100 ms at 48 kHz
    before = cap.read(0)
    before_n = 0 if before is None else before.size
    assert before_n < 1600  # the resampler holds some of it back
    fake_sd.disconnect("USB Mic")
    now[0] = 10.2
    flushed = cap.read(0)  # sees the loss: everything captured before it comes out now
    assert flushed is not None and before_n + flushed.size == 1600
    assert cap.poll_outages() == []  # not over yet
    now[0] = 11.5
    assert cap.read(0) is None  # still gone
    fake_sd.reconnect("USB Mic")
    now[0] = 13.45
    cap.read(0)
    assert cap.poll_events()[-1] == "audio source 'USB Mic' is back"
    # from the read that saw the loss (10.2) to the one that reopened the device (13.45)
    assert cap.poll_outages() == [Outage(at=1600, samples=52000, kind=OutageKind.NO_SOURCE)]
    assert cap.poll_outages() == []
    fake_sd.streams[-1].push(np.full(4800, 0.2, np.float32))
    cap.stop()
    assert _drain(cap).size == 1600
    assert cap.poll_outages() == []


def test_an_outage_still_open_at_stop_is_reported_then(fake_sd: FakeSoundDevice) -> None:
    fake_sd.add_device("USB Mic", rate=16000, channels=1)
    now = [0.0]
    cap = Capture([_source(fake_sd, 0)], sd=fake_sd, clock=lambda: now[0])
    cap.start()
    fake_sd.streams[-1].push(np.full(800, 0.2, np.float32))
    fake_sd.disconnect("USB Mic")
    assert cap.read(0).size == 800
    now[0] = 2.0
    cap.stop()
    assert _drain(cap).size == 0
    assert cap.poll_outages() == [Outage(at=800, samples=32000, kind=OutageKind.NO_SOURCE)]


def test_one_source_lost_beside_another_is_no_outage(fake_sd: FakeSoundDevice) -> None:
    fake_sd.add_device("Mic", rate=16000, channels=1)
    fake_sd.add_device("Monitor of speakers", rate=16000, channels=1)
    now = [0.0]
    cap = Capture(
        [_source(fake_sd, 0), _source(fake_sd, 1)], sd=fake_sd, reconnect_interval_s=1.0, clock=lambda: now[0]
    )
    cap.start()
    fake_sd.disconnect("Mic")
    cap.read(0)
    system = fake_sd.streams[-1]
    for _ in range(5):
        system.push(np.full(1600, 0.1, np.float32))
        now[0] += 0.1
        cap.read(0)
    fake_sd.reconnect("Mic")
    now[0] = 2.0
    cap.read(0)
    assert cap.poll_events()[-1] == "audio source 'Mic' is back"
    assert cap.poll_outages() == []
    # and when both go, only the time with neither counts
    fake_sd.disconnect("Mic")
    cap.read(0)
    now[0] = 2.5
    fake_sd.disconnect("Monitor of speakers")
    cap.read(0)
    now[0] = 4.0
    fake_sd.reconnect("Mic")
    cap.read(0)
    [outage] = cap.poll_outages()
    assert outage.samples == 24000
    cap.stop()


def test_mic_and_system_audio_are_mixed(fake_sd: FakeSoundDevice) -> None:
    fake_sd.add_device("Mic", rate=16000, channels=1)
    fake_sd.add_device("Monitor of speakers", rate=16000, channels=2)
    cap = Capture([_source(fake_sd, 0), _source(fake_sd, 1)], sd=fake_sd)
    cap.start()
    mic, system = fake_sd.streams[-2], fake_sd.streams[-1]
    mic.push(np.full(1600, 0.25, np.float32))
    assert cap.read(0) is None  # waits for the other source (within the skew limit)
    system.push(np.full((800, 2), 0.5, np.float32))
    out = cap.read(0)
    assert out.size == 800 and np.allclose(out, 0.75)
    cap.stop()
    tail = _drain(cap)
    assert tail.size == 800 and np.allclose(tail, 0.25)


def test_mixer_does_not_wait_on_a_stalled_source() -> None:
    m = Mixer(["a", "b"], max_skew_ms=100)
    m.push("a", np.full(1000, 0.9, np.float32))
    assert m.pull().size == 0
    m.push("a", np.full(1000, 0.9, np.float32))
    out = m.pull()
    assert out.size == 2000 and np.allclose(out, 0.9)
    m.push("a", np.full(10, 0.8, np.float32))
    m.push("b", np.full(10, 0.8, np.float32))
    assert np.allclose(m.pull(), 1.0)  # clipped


def test_block_arriving_after_the_final_flush_is_dropped_not_an_error(fake_sd: FakeSoundDevice) -> None:
    # A real PortAudio callback can still fire while Stop closes the device (seen with PulseAudio
    # monitor sources); the resampler was already flushed, so the late block must not reach it.
    fake_sd.add_device("Monitor of sink", rate=44100, channels=2)
    cap = Capture([_source(fake_sd, 0)], sd=fake_sd)
    cap.start()
    stream = fake_sd.streams[-1]
    stream.push(np.full((4410, 2), 0.1, np.float32))
    cap.stop()
    flushed = _drain(cap)
    assert abs(flushed.size - 1600) <= 2
    stream.push(np.full((4410, 2), 0.1, np.float32))  # the late callback
    assert cap.read(0) is None


def test_stop_closes_devices_before_the_final_flush(fake_sd: FakeSoundDevice) -> None:
    fake_sd.add_device("Mic", rate=48000, channels=1)
    cap = Capture([_source(fake_sd, 0)], sd=fake_sd)
    cap.start()
    stream = fake_sd.streams[-1]
    running_while_closing: list[bool] = []
    original_close = stream.close

    def close() -> None:
        running_while_closing.append(cap.running)
        original_close()

    stream.close = close  # type: ignore[method-assign]
    cap.stop()
    assert running_while_closing == [True] and stream.closed and not cap.running


def test_captured_samples_counts_queued_and_dropped_audio_at_16k(fake_sd: FakeSoundDevice) -> None:
    fake_sd.add_device("Mic", rate=48000, channels=2)
    cap = Capture([_source(fake_sd, 0)], sd=fake_sd, queue_seconds=0.1, block_ms=20)  # 5 blocks
    cap.start()
    stream = fake_sd.streams[-1]
    assert stream.done.wait(5) and cap.captured_samples() == 0
    for _ in range(3):
        stream.push(np.zeros((960, 2), np.float32))  # 20 ms at 48 kHz, not read yet
    assert cap.captured_samples() == 3 * 320  # what waits in the capture queue counts
    first = cap.read(0)
    assert cap.captured_samples() == 3 * 320  # reading moves it nowhere: it counts capture
    for _ in range(8):
        stream.push(np.zeros((960, 2), np.float32))
    # dropped blocks count: they come out of read as a marked stretch of silence
    assert cap.overruns() == 3 and cap.captured_samples() == 11 * 320
    cap.stop()
    # the last 3 had no block after them: silence at the end, and everything comes out
    assert (0 if first is None else first.size) + _drain(cap).size == 11 * 320
    assert cap.poll_outages() == [Outage(at=8 * 320, samples=3 * 320, kind=OutageKind.DROPPED)]
    stream.push(np.zeros((960, 2), np.float32))  # a callback racing Stop: dropped, not counted
    assert cap.read(0) is None and cap.captured_samples() == 11 * 320


def test_captured_samples_survive_a_device_reconnect(fake_sd: FakeSoundDevice) -> None:
    fake_sd.add_device("USB Mic", rate=16000, channels=1)
    now = [0.0]
    cap = Capture([_source(fake_sd, 0)], sd=fake_sd, reconnect_interval_s=1.0, clock=lambda: now[0])
    cap.start()
    fake_sd.streams[-1].push(np.zeros(1600, np.float32))
    fake_sd.disconnect("USB Mic")
    cap.read(0)
    fake_sd.reconnect("USB Mic")
    now[0] = 2.0
    cap.read(0)
    assert cap.poll_events()[-1] == "audio source 'USB Mic' is back"
    fake_sd.streams[-1].push(np.zeros(800, np.float32))
    assert cap.captured_samples() == 2400
    cap.stop()


def test_a_sound_server_that_hangs_cannot_hold_up_open_or_stop(fake_sd: FakeSoundDevice, monkeypatch) -> None:
    # A stopped pulseaudio: PortAudio's open and stop wait for it for ever (measured), which froze
    # the window at Start and Stop. Both now give up after their limit and finish in the background.
    from captionist.audio import capture as capture_module

    monkeypatch.setattr(capture_module, "OPEN_WAIT_S", 0.2)
    monkeypatch.setattr(capture_module, "CLOSE_WAIT_S", 0.2)
    fake_sd.add_device("Mic", rate=16000, channels=1)
    cap = Capture([_source(fake_sd, 0)], sd=fake_sd)
    cap.start()
    stream = fake_sd.streams[-1]
    stream.push(np.full(1600, 0.25, np.float32))
    fake_sd.hang()
    try:
        cap.stop()  # returns although the device's stop is still waiting
        assert not stream.closed
        assert _drain(cap).size == 1600  # what was captured before stays readable
        with pytest.raises(CaptureError, match="cannot open 'Mic': the sound system is not answering"):
            Capture([_source(fake_sd, 0)], sd=fake_sd).start()  # at once, while the stop waits
        assert len(fake_sd.streams) == 1  # PortAudio was not entered a second time
    finally:
        fake_sd.answer()
    wait_until_answered()
    assert stream.closed

    fake_sd.hang()  # now with nothing outstanding: an open that waits past its limit
    try:
        with pytest.raises(CaptureError, match="the sound system did not answer within 0.2 s"):
            Capture([_source(fake_sd, 0)], sd=fake_sd).start()
    finally:
        fake_sd.answer()
    wait_until_answered()
    assert len(fake_sd.streams) == 2 and fake_sd.streams[-1].closed  # opened late, closed at once
