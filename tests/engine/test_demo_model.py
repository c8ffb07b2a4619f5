"""The shipped demo model (tools/train_demo_model.py) on committed held-out clips.

The clips (tests/data/demo, written by tools/make_demo_clips.py) are spoken by espeak-ng voices
that training never used, with word sequences training never spoke: words spoken one at a time
(``clips.json``) and connected sentences (``sentences.json``), each list with what was spoken and
when. The model must write nearly all of those words (README: its held-out WER), also after the
48 kHz round trip a sound card and the capture path give the audio; streaming in any chunking
must give what offline gives, and a shorter delay must bring each word out earlier.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile

from captionist import engine, paths
from captionist.models import default_model_path
from tools.demo_vocab import DEMO_WORDS
from tools.eval_demo_model import align, stream_words, through_48k

DEMO_DATA = Path(__file__).resolve().parent.parent / "data" / "demo"
CLIPS = json.loads((DEMO_DATA / "clips.json").read_text())
SENTENCES = json.loads((DEMO_DATA / "sentences.json").read_text())
DELAYS_MS = (240, 480, 960)


def clip_audio(clip: dict) -> np.ndarray:
    pcm, rate = soundfile.read(DEMO_DATA / clip["file"], dtype="float32")
    assert rate == engine.SAMPLE_RATE
    return pcm


@pytest.fixture(scope="module")
def demo() -> engine.Model:
    path = paths.bundled_demo_model()
    assert path.is_file(), f"the demo model is not installed with the package: {path}"
    return engine.Model(path, backend="cpu", n_threads=2)


def test_demo_model_is_small_and_the_default(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CAPTIONIST_HOME", str(tmp_path))  # nothing configured
    path = paths.bundled_demo_model()
    assert default_model_path() == path
    assert path.stat().st_size <= 20 * 1024 * 1024


def test_demo_model_is_the_real_architecture(demo: engine.Model) -> None:
    info = demo.info
    assert info["architecture"] == "voxtral_realtime"
    assert (info["sample_rate"], info["n_left_pad_tokens"]) == (16000, 32)
    assert (info["bos_id"], info["eos_id"], info["streaming_pad_id"]) == (1, 2, 32)


def _score(demo: engine.Model, clips: list[dict], delay_ms: int, path=None) -> tuple[float, int, list[str]]:
    """WER over ``clips``, how many came out exactly, and what came out (``path``: a function the
    audio goes through first)."""
    errors = words = exact = 0
    got = []
    for clip in clips:
        audio = clip_audio(clip) if path is None else path(clip_audio(clip))
        hyp = demo.transcribe(audio, delay_ms=delay_ms).text.split()
        ref = clip["text"].split()
        errors += align(ref, hyp)[0]
        words += len(ref)
        exact += hyp == ref
        got.append(" ".join(hyp))
    return errors / words, exact, got


@pytest.mark.parametrize("through", ["16k", "48k"])
@pytest.mark.parametrize("delay_ms", DELAYS_MS)
def test_offline_transcribes_the_spoken_words(demo: engine.Model, delay_ms: int, through: str) -> None:
    # The model's held-out WER on words spoken one at a time is about 3.5-4 % (README, 120
    # utterances); these 8 clips (40 words, harder than the average: 5 % today, 7.5 % through the
    # round trip, 6-7 clips exact) must stay within 15 % and at least 5 must come out exactly, also
    # through a 48 kHz round trip (where the model trained at 16 kHz only got 42 % wrong). A
    # random-weight model of this shape scores ~100 %.
    wer, exact, got = _score(demo, CLIPS, delay_ms, None if through == "16k" else through_48k)
    assert wer <= 0.15, got
    assert exact >= 5, got


@pytest.mark.parametrize("through", ["16k", "48k"])
@pytest.mark.parametrize("delay_ms", DELAYS_MS)
def test_connected_speech_comes_out_also_through_a_48k_round_trip(
    demo: engine.Model, delay_ms: int, through: str
) -> None:
    # Whole sentences, no pauses between words (52 words in 8 clips), as they are and as a 48 kHz
    # device and the capture path's resampler deliver them. The shipped model gets about 4 % of
    # held-out sentences' words wrong either way (README; 5.8 % on these clips, 7 of 8 exact); they
    # must stay within 12 % and five must come out exactly. The models before it got 7 % (two
    # training stages; 10-14 % of these) and 21 % (one stage) of held-out sentences wrong, the one
    # that learnt only words spoken one at a time 62 % and 69 % of these, none exactly; a
    # random-weight model ~100 %.
    wer, exact, got = _score(demo, SENTENCES, delay_ms, None if through == "16k" else through_48k)
    assert wer <= 0.12, got
    assert exact >= 5, got


def test_text_is_lower_case_words_separated_by_single_spaces(demo: engine.Model) -> None:
    for clip in CLIPS:
        text = demo.transcribe(clip_audio(clip), delay_ms=480).text.strip()
        assert text == " ".join(text.split())
        assert all(w in DEMO_WORDS for w in text.split()), text


@pytest.mark.parametrize("clip", CLIPS, ids=[c["file"] for c in CLIPS])
def test_streaming_in_random_pieces_gives_the_offline_words(demo: engine.Model, clip: dict) -> None:
    audio = clip_audio(clip)
    rng = np.random.default_rng(clip["heldout_index"])
    stream = demo.stream(480)
    pos = 0
    while pos < audio.size:
        n = int(rng.integers(1, 4000))
        stream.feed(audio[pos : pos + n])
        pos += n
    assert stream.finish().text == demo.transcribe(audio, delay_ms=480).text


def test_shorter_delay_brings_words_out_earlier(demo: engine.Model) -> None:
    # on the first clip the model hears right at every delay (so each word's time is that word's)
    for clip in CLIPS:
        audio = clip_audio(clip)
        said = [w["word"] for w in clip["words"]]
        streamed = {delay: stream_words(demo, audio, delay) for delay in DELAYS_MS}  # 80 ms feeds
        if all(words == said for words, _ in streamed.values()):
            break
    else:
        pytest.fail("no held-out clip is heard right at every delay")
    ends = [w["end_ms"] for w in clip["words"]]
    latency = {}
    for delay, (_, at) in streamed.items():
        lat = [a - e for a, e in zip(at, ends, strict=True)]
        assert all(x > 0 for x in lat), lat  # never before the word was heard
        latency[delay] = float(np.mean(lat))
    assert latency[240] < latency[480] < latency[960], latency
    # Each word comes out about the chosen delay after its end (80 ms slots, 80 ms feeds). Training
    # put a word's token d + 1 slots after the slot its end falls in, but the model decides for
    # itself when a word has ended (training's end is a -45 dB threshold): over 120 held-out
    # utterances it is 60-190 ms later than the delay on average (README), on these clips 180-350 ms.
    for delay, mean in latency.items():
        assert delay - 160 <= mean <= delay + 400, latency


def test_cli_transcribe_uses_the_demo_model_by_default(demo: engine.Model, tmp_path: Path) -> None:
    clip = CLIPS[1]
    env = dict(os.environ, CAPTIONIST_HOME=str(tmp_path))
    out = subprocess.run(
        [sys.executable, "-m", "captionist", "transcribe", str(DEMO_DATA / clip["file"]), "--backend", "cpu"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == demo.transcribe(clip_audio(clip), delay_ms=480).text.split()
