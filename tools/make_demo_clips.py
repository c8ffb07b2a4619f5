"""Write a few held-out demo utterances as committed test clips (dev-only; needs espeak-ng).

    python tools/make_demo_clips.py     # tests/data/demo/heldout_NNN.wav, sentence_NNN.wav, *.json

The clips are the first ``--count`` held-out evaluation utterances (``heldout_utterance(i)``:
voices never used in training, word sequences training never speaks, words spoken one at a
time) and the first ``--sentences`` held-out connected sentences (``heldout_sentence(i)``, made
in order by a fresh espeak-ng pool as the evaluation makes them), 16 kHz PCM_16. ``clips.json``
and ``sentences.json`` list each with the words spoken and their exact times. The expected text
is what was spoken, not what any model produced.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import soundfile as sf

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tools.demo_data import SAMPLE_RATE, Utterance, heldout_utterance  # noqa: E402
from tools.demo_sentences import heldout_sentence  # noqa: E402
from tools.espeak_events import EspeakPool  # noqa: E402

OUT = ROOT / "tests" / "data" / "demo"


def write_clip(u: Utterance, index: int, path: Path) -> dict:
    """Write ``u`` as 16 kHz PCM_16 to ``path``; its entry for the clip list."""
    sf.write(path, u.audio, SAMPLE_RATE, subtype="PCM_16")
    words = [
        {"word": w.word, "start_ms": round(w.start * 1000 / SAMPLE_RATE, 2),
         "end_ms": round(w.end * 1000 / SAMPLE_RATE, 2)}
        for w in u.words
    ]  # fmt: skip
    return {"file": path.name, "text": u.text, "heldout_index": index, "voice": u.voice,
            "speed_wpm": u.speed, "pitch": u.pitch, "words": words}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=8)
    ap.add_argument("--sentences", type=int, default=8)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    clips = [
        write_clip(heldout_utterance(i), i, args.out / f"heldout_{i:03d}.wav") for i in range(args.count)
    ]
    (args.out / "clips.json").write_text(json.dumps(clips, indent=1) + "\n")
    with EspeakPool() as pool:
        utts = [heldout_sentence(i, pool) for i in range(args.sentences)]
    sentences = [write_clip(u, i, args.out / f"sentence_{i:03d}.wav") for i, u in enumerate(utts)]
    (args.out / "sentences.json").write_text(json.dumps(sentences, indent=1) + "\n")
    print(f"wrote {len(clips)} word-by-word clips and {len(sentences)} sentences to {args.out}")


if __name__ == "__main__":
    main()
