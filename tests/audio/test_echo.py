"""Echo cancellation (``captionist.audio.echo`` in the mixer): a call on loudspeakers that the
microphone hears again is taken out of the microphone, the microphone's own speech passes, and
the words the model writes for the mix come back. The "room" is an impulse response: the system
audio 150 ms later at half its level, with three weaker reflections."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile

from captionist import engine, paths
from captionist.audio.capture import Capture
from captionist.audio.devices import Source
from captionist.audio.echo import EchoCanceller, EchoUnavailable
from captionist.audio.mixer import Mixer
from tests.fakes.fake_sounddevice import FakeSoundDevice
from tools.eval_demo_model import align

DEMO_DATA = Path(__file__).resolve().parent.parent / "data" / "demo"
SENTENCES = json.loads((DEMO_DATA / "sentences.json").read_text())
RATE = 16000
BLOCK = 320  # 20 ms, as the devices deliver


def room(far: np.ndarray) -> np.ndarray:
    """What a microphone hears of ``far`` played on loudspeakers."""
    h = np.zeros(RATE * 3 // 10, np.float32)
    for ms, gain in ((150, 0.5), (170, -0.2), (200, 0.15), (260, 0.08)):
        h[ms * RATE // 1000] = gain
    return np.convolve(far, h)[: far.size].astype(np.float32)


def sentence(index: int) -> np.ndarray:
    pcm, rate = soundfile.read(DEMO_DATA / SENTENCES[index]["file"], dtype="float32")
    assert rate == RATE
    return pcm


def call(first: int, second: int, echo: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, slice]:
    """The other side says sentence ``first`` (the system audio), then, half a second after it,
    the user says ``second`` into the microphone; (far, microphone, own speech, where it is)."""
    a, b = sentence(first), sentence(second)
    n = a.size + b.size + RATE
    far = np.zeros(n, np.float32)
    far[: a.size] = a
    own = np.zeros(n, np.float32)
    at = slice(a.size + RATE // 2, a.size + RATE // 2 + b.size)
    own[at] = 0.8 * b
    noise = np.random.default_rng(first).normal(0, 0.002, n).astype(np.float32)
    return far, own + noise + (room(far) if echo else 0), own, at


def mixed(far: np.ndarray, mic: np.ndarray, cancel: bool) -> tuple[np.ndarray, np.ndarray]:
    """Both through a mixer block by block: (the mix, the microphone's part of it)."""
    mixer = Mixer(["mic", "system"], cancellers={"mic": EchoCanceller()} if cancel else None)
    out = []
    for i in range(0, far.size, BLOCK):
        mixer.push("system", far[i : i + BLOCK])
        mixer.push("mic", mic[i : i + BLOCK])
        out.append(mixer.pull())
    out.append(mixer.pull(final=True))
    mix = np.concatenate(out)
    return mix, mix - np.clip(far, -1, 1)  # the system audio passes as it is (no clipping here)


def db(pcm: np.ndarray) -> float:
    return float(10 * np.log10(np.mean(np.square(pcm, dtype=np.float64)) + 1e-12))


def test_the_echo_is_taken_out_of_the_microphone() -> None:
    far, mic, _, _ = call(2, 4, echo=True)
    _, part = mixed(far, mic, cancel=True)
    learnt = slice(RATE, sentence(2).size)  # the other side talks; the first second is for learning
    assert db(mic[learnt]) - db(part[learnt]) >= 15  # measured: 20 dB
    _, kept = mixed(far, mic, cancel=False)
    assert db(mic[learnt]) - db(kept[learnt]) < 0.1  # the control: the mixer alone keeps it


def test_the_microphones_own_speech_passes() -> None:
    # after the echo was learnt, and with no echo at all (headphones): the user's words keep their
    # level and shape (8 ms later)
    for echo in (True, False):
        far, mic, own, at = call(3, 5, echo=echo)
        _, part = mixed(far, mic, cancel=True)
        assert abs(db(part[at]) - db(own[at])) <= 1.0  # measured: 0.01 dB
        lag = 128
        similar = np.corrcoef(own[at][: -lag or None], part[at.start + lag : at.stop])[0, 1]
        assert similar >= 0.9, echo  # measured: 0.95 (the canceller's high-pass filter)


@pytest.fixture(scope="module")
def demo() -> engine.Model:
    return engine.Model(paths.bundled_demo_model(), backend="cpu", n_threads=2)


def test_the_model_writes_the_call_not_its_echo(demo: engine.Model) -> None:
    # four calls: the other side, then the user; word errors of the mix with and without the
    # canceller (measured: 21 without, 6 with; the demo model itself gets a word or two wrong in
    # a plain mix of these)
    errors = {False: 0, True: 0}
    for first, second in ((2, 4), (3, 5), (6, 7), (4, 2)):
        far, mic, _, _ = call(first, second, echo=True)
        want = f"{SENTENCES[first]['text']} {SENTENCES[second]['text']}".split()
        for cancel in errors:
            heard = demo.transcribe(mixed(far, mic, cancel)[0]).text.lower().replace(",", " ").split()
            errors[cancel] += align(want, heard)[0]
    assert errors[False] >= 12  # the echo costs words
    assert errors[True] <= errors[False] // 2


def test_nan_or_clipping_does_not_spoil_the_canceller() -> None:
    far, mic, _, _ = call(2, 4, echo=True)
    canceller = EchoCanceller()
    out = []
    for i in range(0, far.size, BLOCK):
        near = mic[i : i + BLOCK].copy()
        if i == 10 * BLOCK:
            near[:50] = np.nan
            near[50:60] = np.inf
        out.append(canceller.process(near, 3 * far[i : i + BLOCK]))  # the reference clips too
    part = np.concatenate(out)
    assert np.isfinite(part).all()
    learnt = slice(RATE, sentence(2).size)
    assert db(mic[learnt]) - db(part[learnt]) >= 10
    with pytest.raises(ValueError, match="equal lengths"):
        canceller.process(np.zeros(10, np.float32), np.zeros(11, np.float32))


class Failing:
    def process(self, near: np.ndarray, far: np.ndarray) -> np.ndarray:
        raise RuntimeError("AEC3 fell over")


def test_a_failing_canceller_leaves_the_microphone_as_it_is() -> None:
    mixer = Mixer(["mic", "system"], cancellers={"mic": Failing()})  # type: ignore[dict-item]
    mixer.push("mic", np.full(BLOCK, 0.25, np.float32))
    mixer.push("system", np.full(BLOCK, 0.5, np.float32))
    assert np.allclose(mixer.pull(), 0.75)
    assert mixer.problems == ["echo cancellation stopped: AEC3 fell over"]
    mixer.push("mic", np.full(BLOCK, 0.25, np.float32))
    mixer.push("system", np.full(BLOCK, 0.5, np.float32))
    assert np.allclose(mixer.pull(), 0.75) and len(mixer.problems) == 1  # said once


def source(fake_sd: FakeSoundDevice, index: int, kind: str) -> Source:
    d = fake_sd.devices[index]
    return Source(id=str(index), name=d.name, kind=kind, hostapi="ALSA", channels=d.channels,
                  samplerate=d.rate, open_device=index)  # fmt: skip


@pytest.mark.parametrize(
    ("kinds", "cancel_echo", "cancelled"),
    [
        (("input", "monitor"), True, {"0"}),  # a microphone beside system audio
        (("input", "loopback", "input"), True, {"0", "2"}),  # each microphone
        (("input", "input"), True, set()),  # two microphones: no system audio to take out
        (("monitor",), True, set()),
        (("input", "monitor"), False, set()),  # the level meters
    ],
)
def test_which_sources_are_cancelled(
    fake_sd: FakeSoundDevice, kinds: tuple[str, ...], cancel_echo: bool, cancelled: set[str]
) -> None:
    for i, kind in enumerate(kinds):
        fake_sd.add_device(f"{kind} {i}", rate=16000, channels=1)
    cap = Capture([source(fake_sd, i, k) for i, k in enumerate(kinds)], sd=fake_sd, cancel_echo=cancel_echo)
    assert set(cap._mixer._cancellers) == cancelled


def test_without_the_library_the_sources_are_mixed_as_they_are_and_it_is_said(
    fake_sd: FakeSoundDevice, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unavailable() -> EchoCanceller:
        raise EchoUnavailable("echo cancellation is unavailable (No module named 'pywebrtc_audio')")

    monkeypatch.setattr("captionist.audio.capture.EchoCanceller", unavailable)
    fake_sd.add_device("Mic", rate=16000, channels=1)
    fake_sd.add_device("Monitor of speakers", rate=16000, channels=1)
    cap = Capture([source(fake_sd, 0, "input"), source(fake_sd, 1, "monitor")], sd=fake_sd)
    assert cap.poll_events() == ["echo cancellation is unavailable (No module named 'pywebrtc_audio')"]
    assert cap._mixer._cancellers == {}
