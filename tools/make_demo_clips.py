"""Write a few held-out demo utterances as committed test clips (dev-only; needs espeak-ng).

    python tools/make_demo_clips.py            # tests/data/demo/heldout_NNN.wav + clips.json

The clips are the first ``--count`` held-out evaluation utterances (``heldout_utterance(i)``:
voices never used in training, word sequences training never speaks), 16 kHz PCM_16, and
``clips.json`` lists each with the words spoken and their exact times. The expected text is what
was spoken, not what any model produced.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import soundfile as sf

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tools.demo_data import SAMPLE_RATE, heldout_utterance  # noqa: E402

OUT = ROOT / "tests" / "data" / "demo"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=8)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    clips = []
    for i in range(args.count):
        u = heldout_utterance(i)
        name = f"heldout_{i:03d}.wav"
        sf.write(args.out / name, u.audio, SAMPLE_RATE, subtype="PCM_16")
        words = [
            {"word": w.word, "start_ms": round(w.start * 1000 / SAMPLE_RATE, 2),
             "end_ms": round(w.end * 1000 / SAMPLE_RATE, 2)}
            for w in u.words
        ]  # fmt: skip
        clips.append({"file": name, "text": u.text, "heldout_index": i, "voice": u.voice,
                      "speed_wpm": u.speed, "pitch": u.pitch, "words": words})  # fmt: skip
    (args.out / "clips.json").write_text(json.dumps(clips, indent=1) + "\n")
    print(f"wrote {len(clips)} clips to {args.out}")


if __name__ == "__main__":
    main()
