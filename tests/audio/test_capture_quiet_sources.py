"""System audio that sends nothing while nothing plays (WASAPI loopback, ScreenCaptureKit) is paced
by the clock: its quiet time comes out of ``Capture.read`` as silence of the same length, so the
session clock, the caption times and the lag stay true (``captionist.audio.capture``)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from captionist.audio.capture import LATENCY_S, QUIET_AFTER_S, Capture
from captionist.audio.devices import Source, SourceBackend
from tests.audio.clocked_capture import BLOCK_S, TONE, Clock, capture, loud_runs, started
from tests.fakes.fake_sounddevice import FakeSoundDevice


@pytest.mark.parametrize("backend", [SourceBackend.WASAPI_LOOPBACK, SourceBackend.SCREENCAPTUREKIT])
def test_a_paused_video_keeps_its_time(fake_sd: FakeSoundDevice, backend: SourceBackend) -> None:
    run = started(fake_sd, backend)
    cap = run.cap
    run.play(1.0)
    run.nothing(5.0)  # the video is paused: the loopback sends nothing at all
    quiet_so_far = run.audio().size / 16000
    assert 6.0 - LATENCY_S - 0.05 <= quiet_so_far <= 6.0  # the silence came while it lasted
    run.play(1.0)
    cap.stop()
    run.read()
    pcm = run.audio()
    (a0, a1), (b0, b1) = loud_runs(pcm)
    assert a0 == pytest.approx(0.0, abs=0.01) and a1 == pytest.approx(1.0, abs=0.01)
    assert b0 == pytest.approx(6.0, abs=0.03) and b1 == pytest.approx(7.0, abs=0.03)  # its real time
    assert cap.captured_samples() == pcm.size  # the lag meter counts the silence as audio in
    assert cap.silent_seconds("out") == pytest.approx(0.0, abs=0.01)
    assert cap.poll_outages() == []  # silence, not audio that went missing


def test_a_long_pause_warns_that_nothing_is_heard(fake_sd: FakeSoundDevice) -> None:
    # the "no sound from ... for 10 s" notice reads silent_seconds, which a source that sends
    # nothing never raised
    run = started(fake_sd, SourceBackend.WASAPI_LOOPBACK)
    cap = run.cap
    run.play(0.5)
    run.nothing(12.0)
    assert cap.silent_seconds("out") >= 11.0


def test_blocks_a_little_late_are_not_a_pause(fake_sd: FakeSoundDevice) -> None:
    run = started(fake_sd, SourceBackend.WASAPI_LOOPBACK)
    cap = run.cap
    for _ in range(10):
        run.play(0.2)
        run.nothing(round(QUIET_AFTER_S - 0.1, 1))  # a late block, not a quiet source
    cap.stop()
    run.read()
    assert run.audio().size == pytest.approx(10 * 0.2 * 16000, abs=2)  # what it sent, no more


@pytest.mark.parametrize("pause_s", [5, 30])
def test_the_quiet_loopback_beside_a_microphone_stays_in_step(fake_sd: FakeSoundDevice, pause_s: int) -> None:
    # mixed: the microphone's words after a pause of the loopback land at their real time, and the
    # loopback's sound after its pause lands at its own. The quiet loopback lags the microphone by
    # LATENCY_S all through a pause; a long one must not be taken for clock drift and stretched
    # (which would put its sound after the pause 0.1 s late)
    clock = Clock()
    fake_sd.add_device("Mic", rate=16000, channels=1)
    speakers = capture(fake_sd, SourceBackend.WASAPI_LOOPBACK, clock).sources[0]
    mic = Source(id="mic", name="Mic", kind="input", hostapi="ALSA", channels=1, samplerate=16000,
                 open_device=0)  # fmt: skip
    speakers = replace(speakers, open_device=1)
    cap = Capture(
        [mic, speakers], sd=fake_sd, clock=clock, openers={SourceBackend.WASAPI_LOOPBACK: fake_sd.InputStream}
    )
    cap.start()
    mic_stream, out_stream = fake_sd.streams[-2], fake_sd.streams[-1]
    out: list[np.ndarray] = []
    pause = round(pause_s / BLOCK_S)
    for step in range(150 + pause):  # the loopback plays for 1 s, pauses, plays 2 s
        clock.t += BLOCK_S
        mic_stream.push(np.zeros(320, np.float32))
        if not 50 <= step < 50 + pause:
            out_stream.push(np.full((960, 2), TONE, np.float32))
        while (pcm := cap.read(0)) is not None:
            out.append(pcm)
    (a0, a1), (b0, b1) = loud_runs(np.concatenate(out))
    assert a1 == pytest.approx(1.0, abs=0.03)
    assert b0 == pytest.approx(1 + pause_s, abs=0.03)
