"""Evaluate the demo model with our engine on held-out speech: WER and word latency per delay.

Dev-only (needs espeak-ng; no torch). Run from the repository root::

    python tools/eval_demo_model.py                      # all three conditions, 240/480/960 ms
    python tools/eval_demo_model.py --n 300 --delays 80 240 480 960 2400 --json /tmp/eval.json
    python tools/eval_demo_model.py --conditions sentences-48k

Held-out speech (voices never used in training, word sequences the training script excludes):

* ``words``: ``tools.demo_data.heldout_utterance(i)``, 3..8 words spoken one at a time, 16 kHz;
* ``sentences``: ``tools.demo_sentences.heldout_sentence(i)``, 3..10 words as one connected
  espeak-ng sentence (no word gap, a comma now and then), 16 kHz;
* ``words-48k``, ``sentences-48k``: the same through a 48 kHz round trip as a sound card gives
  it: soxr HQ up to 48 kHz, then the capture path's own streaming resampler in 20 ms blocks back
  to 16 kHz.

The live path (a PulseAudio monitor and ``captionist live``) is ``tools/eval_demo_live.py``. For
every condition and delay it prints

* **WER**: word edit distance / reference words, offline (``Model.transcribe``);
* **streamed WER**: the same audio fed to a ``Stream`` in 80 ms pieces (it should equal offline);
* **WER per held-out voice** (offline);
* **latency**: for every correctly recognised word (edit-distance alignment), the audio received
  when its token came out of the stream minus the end of the word's audio; mean and 90th percentile.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tools.demo_data import SAMPLE_RATE, Utterance, heldout_utterance  # noqa: E402
from tools.demo_sentences import heldout_sentence  # noqa: E402
from tools.demo_soundcard import capture_resample  # noqa: E402
from tools.espeak_events import EspeakPool  # noqa: E402

CHUNK = 1280  # 80 ms feeds
CONDITIONS = ("words", "words-48k", "sentences", "sentences-48k")
DEVICE_RATE = 48000
CAPTURE_BLOCK = DEVICE_RATE * 20 // 1000  # the app's 20 ms capture blocks


def through_48k(audio: np.ndarray) -> np.ndarray:
    """``audio`` (16 kHz) played at 48 kHz and captured back as the app does (same length)."""
    import soxr

    high = soxr.resample(audio, SAMPLE_RATE, DEVICE_RATE, quality="HQ").astype(np.float32)
    back = capture_resample(high, DEVICE_RATE, CAPTURE_BLOCK)
    out = np.zeros(audio.size, np.float32)
    out[: min(out.size, back.size)] = back[: out.size]
    return out


def condition_utterances(condition: str, n: int) -> list[Utterance]:
    """The ``n`` held-out utterances of one condition (see the module docstring)."""
    import dataclasses

    if condition not in CONDITIONS:
        raise ValueError(f"condition must be one of {', '.join(CONDITIONS)}; got {condition!r}")
    if condition.startswith("words"):
        utts = [heldout_utterance(i) for i in range(n)]
    else:
        with EspeakPool() as pool:
            utts = [heldout_sentence(i, pool) for i in range(n)]
    if condition.endswith("-48k"):
        utts = [dataclasses.replace(u, audio=through_48k(u.audio)) for u in utts]
    return utts


def align(ref: list[str], hyp: list[str]) -> tuple[int, list[tuple[int, int]]]:
    """Word edit distance and the (ref index, hyp index) pairs the best alignment matches."""
    n, m = len(ref), len(hyp)
    dist = np.zeros((n + 1, m + 1), dtype=np.int64)
    dist[:, 0] = np.arange(n + 1)
    dist[0, :] = np.arange(m + 1)
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            sub = dist[i - 1, j - 1] + (ref[i - 1] != hyp[j - 1])
            dist[i, j] = min(sub, dist[i - 1, j] + 1, dist[i, j - 1] + 1)
    pairs: list[tuple[int, int]] = []
    i, j = n, m
    while i > 0 and j > 0:
        if dist[i, j] == dist[i - 1, j - 1] + (ref[i - 1] != hyp[j - 1]):
            if ref[i - 1] == hyp[j - 1]:
                pairs.append((i - 1, j - 1))
            i, j = i - 1, j - 1
        elif dist[i, j] == dist[i - 1, j] + 1:
            i -= 1
        else:
            j -= 1
    return int(dist[n, m]), pairs[::-1]


@dataclass
class DelayResult:
    delay_ms: int
    condition: str = "words"
    words: int = 0
    errors: int = 0
    stream_errors: int = 0
    stream_equals_offline: int = 0
    latencies_ms: list[float] = field(default_factory=list)
    by_voice: dict[str, list[int]] = field(default_factory=dict)  # voice -> [errors, words], offline

    def add(self, voice: str, errors: int, words: int) -> None:
        self.errors += errors
        self.words += words
        tally = self.by_voice.setdefault(voice, [0, 0])
        tally[0] += errors
        tally[1] += words

    def summary(self, n_utts: int) -> dict:
        lat = np.array(self.latencies_ms, dtype=np.float64)
        return {
            "condition": self.condition,
            "delay_ms": self.delay_ms,
            "utterances": n_utts,
            "words": self.words,
            "wer": self.errors / max(1, self.words),
            "stream_wer": self.stream_errors / max(1, self.words),
            "stream_equals_offline": self.stream_equals_offline,
            "latency_mean_ms": float(lat.mean()) if lat.size else float("nan"),
            "latency_p90_ms": float(np.percentile(lat, 90)) if lat.size else float("nan"),
            "latency_words": int(lat.size),
            "wer_by_voice": {v: e / max(1, w) for v, (e, w) in sorted(self.by_voice.items())},
        }


def stream_words(model, audio: np.ndarray, delay_ms: int) -> tuple[list[str], list[int]]:
    """Words out of a Stream fed 80 ms at a time, and the audio ms received when each came out."""
    stream = model.stream(delay_ms)
    words: list[str] = []
    at: list[int] = []
    for start in range(0, audio.size, CHUNK):
        up = stream.feed(audio[start : start + CHUNK])
        for tok in up.new_tokens:
            if tok.piece.strip():
                words.append(tok.piece.strip())
                at.append(up.audio_ms_received)
    up = stream.finish()
    for tok in up.new_tokens:
        if tok.piece.strip():
            words.append(tok.piece.strip())
            at.append(up.audio_ms_received)
    return words, at


def evaluate(
    model_path: Path,
    n: int,
    delays_ms: list[int],
    threads: int | None,
    conditions: tuple[str, ...] = CONDITIONS,
) -> list[dict]:
    from captionist.engine import Model

    model = Model(model_path, backend="cpu", n_threads=threads)
    results = []
    for condition in conditions:
        results += evaluate_condition(model, condition_utterances(condition, n), delays_ms, condition)
    return results


def evaluate_condition(model, utts: list[Utterance], delays_ms: list[int], condition: str) -> list[dict]:
    results = []
    for delay in delays_ms:
        r = DelayResult(delay, condition)
        for u in utts:
            ref = [w.word for w in u.words]
            hyp = model.transcribe(u.audio, delay_ms=delay).text.split()
            r.add(u.voice, align(ref, hyp)[0], len(ref))
            s_hyp, s_at = stream_words(model, u.audio, delay)
            r.stream_equals_offline += s_hyp == hyp
            errs, pairs = align(ref, s_hyp)
            r.stream_errors += errs
            for ri, hi in pairs:
                end_ms = u.words[ri].end * 1000.0 / SAMPLE_RATE
                r.latencies_ms.append(s_at[hi] - end_ms)
        results.append(r.summary(len(utts)))
    return results


def table(results: list[dict]) -> str:
    lines = [
        "| speech | delay | utterances | words | WER | streamed WER | mean word latency | p90 latency |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r['condition']} | {r['delay_ms']} ms | {r['utterances']} | {r['words']} | "
            f"{100 * r['wer']:.1f} % | {100 * r['stream_wer']:.1f} % | "
            f"{r['latency_mean_ms']:.0f} ms | {r['latency_p90_ms']:.0f} ms |"
        )
    voices = sorted({v for r in results for v in r["wer_by_voice"]})
    head = "| speech | delay | " + " | ".join(f"WER {v}" for v in voices) + " |"
    lines += ["", head, "|---" * (len(voices) + 2) + "|"]
    for r in results:
        cells = " | ".join(f"{100 * r['wer_by_voice'].get(v, float('nan')):.1f} %" for v in voices)
        lines.append(f"| {r['condition']} | {r['delay_ms']} ms | {cells} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", type=Path, default=ROOT / "app" / "captionist" / "models_data" / "demo.gguf")
    ap.add_argument("--n", type=int, default=240, help="held-out utterances (>= 200 for the issue's figure)")
    ap.add_argument("--delays", type=int, nargs="+", default=[240, 480, 960], help="delays in ms")
    ap.add_argument("--conditions", nargs="+", choices=CONDITIONS, default=list(CONDITIONS))
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = ap.parse_args()
    t0 = time.monotonic()
    results = evaluate(args.model, args.n, args.delays, args.threads, tuple(args.conditions))
    print(table(results))
    print(f"({time.monotonic() - t0:.0f} s; model {args.model})")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
