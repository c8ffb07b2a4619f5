"""``captionist transcribe`` on a recording with pauses: every utterance is transcribed.

Three held-out demo clips (tests/data/demo) joined with 1 s of silence, through the CLI with the
shipped demo model (Voxtral architecture, which ends each utterance with EOS). Decoding used to
stop at the first EOS, so only the first clip's words came out, with exit status 0.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from captionist import engine, paths
from captionist.__main__ import main
from tools.eval_demo_model import align

DEMO_DATA = Path(__file__).resolve().parent / "data" / "demo"
CLIPS = json.loads((DEMO_DATA / "clips.json").read_text())[:3]


@pytest.fixture
def recording(tmp_path: Path) -> Path:
    parts = []
    for clip in CLIPS:
        pcm, rate = sf.read(DEMO_DATA / clip["file"], dtype="float32")
        assert rate == engine.SAMPLE_RATE
        parts += [pcm, np.zeros(engine.SAMPLE_RATE, np.float32)]
    path = tmp_path / "three.wav"
    sf.write(path, np.concatenate(parts), engine.SAMPLE_RATE, subtype="FLOAT")
    return path


@pytest.fixture
def demo_model() -> Path:
    path = paths.bundled_demo_model()
    if not path.is_file():
        pytest.skip(f"the demo model is not installed with the package: {path}")
    return path


def test_every_utterance_of_a_recording_is_transcribed(
    recording: Path, demo_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["transcribe", str(recording), "--model", str(demo_model), "--backend", "cpu", "--threads", "1"]
    assert main(args) == 0
    out = capsys.readouterr().out
    ref = " ".join(c["text"] for c in CLIPS).split()
    hyp = out.split()
    errors, pairs = align(ref, hyp)
    assert errors / len(ref) <= 0.25, out  # the demo model's held-out WER is about 4 %
    last_clip_first_word = len(ref) - len(CLIPS[-1]["text"].split())
    assert any(r >= last_clip_first_word for r, _ in pairs), out  # words after the last pause
    assert len(out.strip().splitlines()) >= len(CLIPS), out  # a line per utterance at least


def test_the_reference_stop_at_eos_rule_stays_an_explicit_option(recording: Path, demo_model: Path) -> None:
    pcm, _ = sf.read(recording, dtype="float32")
    model = engine.Model(demo_model, backend="cpu", n_threads=1)
    first_only = model.transcribe(pcm, stop_at_end_of_utterance=True).text.split()
    everything = model.transcribe(pcm).text.split()
    assert len(first_only) <= len(CLIPS[0]["text"].split()) + 1 < len(everything)
    ends = [e for _, e in model.transcribe(pcm).events if e == engine.StreamEvent.END_OF_UTTERANCE]
    assert len(ends) >= len(CLIPS) - 1  # each pause is an event, not the end
