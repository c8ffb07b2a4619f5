"""Evaluate the demo model the way a user hears it: speech played into a PulseAudio null sink and
captioned live from its monitor by ``captionist live`` (dev-only; needs pulseaudio,
pulseaudio-utils, espeak-ng and PortAudio; no torch). Run from the repository root::

    python tools/eval_demo_live.py                        # 45 held-out sentences, 240/480/960 ms
    python tools/eval_demo_live.py --n 20 --delays 480 --json /tmp/live.json

Everything goes through the real path: a private PulseAudio daemon (``tests/e2e/pulse_server.py``)
with a 48 kHz null sink; ``paplay`` plays 16 kHz audio into it (PulseAudio resamples it to 48 kHz);
``captionist live --device pulse:<sink>.monitor`` records the monitor at 48 kHz, resamples it in
its capture blocks and captions it; its printed captions are the hypothesis.

* **Held-out sentences** (``tools.demo_sentences.heldout_sentence(i)``, ``i < --n``: held-out
  voices and word sequences, connected speech) are played one after another with ``--gap`` s of
  silence between them, in one session per delay. WER is the word edit distance between all the
  sentences' words and all the words printed, over the reference words. *Latency* of a correctly
  recognised word is when its text was printed minus when its audio ended, on this process's
  clock (playback start + the word's end in the played file): everything the user waits for -
  PulseAudio's buffering, the capture block, the queue and inference included.
* **The README's phrases**, spoken by espeak-ng with its defaults (voice ``en``, 175 words per
  minute, no word gap) straight into the sink, each in a session of its own: whether every word
  comes out, in order, with nothing else.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile as sf

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tests.e2e.pulse_server import PulseServer  # noqa: E402
from tools.demo_data import SAMPLE_RATE  # noqa: E402
from tools.demo_sentences import heldout_sentence  # noqa: E402
from tools.espeak_events import EspeakPool  # noqa: E402
from tools.eval_demo_model import align  # noqa: E402

SINK = "captionist_eval"
PHRASES = (
    "hello world, one two three",  # README, first run
    "hello world start captions one two three four left right up down okay next stop",  # screenshots
)
START_GRACE_S = 1.0  # silence played before the first sentence (the stream warms up)
END_GRACE_S = 3.0  # captured after the last sentence (its words are still due)


@dataclass
class LiveRun:
    """What one ``captionist live`` session printed: each word with the time it appeared."""

    words: list[str]
    at: list[float]  # time.monotonic() when each word's first character was read
    stderr: str
    returncode: int


def _live_cmd(model: Path, delay_ms: int, duration: float, output: Path) -> list[str]:
    return [
        sys.executable, "-m", "captionist", "live", "--model", str(model),
        "--device", f"pulse:{SINK}.monitor", "--latency-ms", str(delay_ms),
        "--duration", f"{duration:.1f}", "--backend", "cpu", "-o", str(output),
    ]  # fmt: skip


def run_session(pulse: PulseServer, model: Path, delay_ms: int, duration: float, play: list[str],
                work: Path) -> tuple[LiveRun, float]:  # fmt: skip
    """Start ``captionist live`` for ``duration`` s, once it records run ``play`` (a shell command
    that plays into the sink), and read its captions as they are printed. Returns the run and
    the monotonic time the playback command started."""
    env = pulse.env(
        dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "app"), os.environ.get("PYTHONPATH", "")]))
    )
    proc = subprocess.Popen(
        _live_cmd(model, delay_ms, duration, work / f"live-{delay_ms}.txt"),
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=work,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    if not pulse.wait_for_recording(timeout_s=60):
        proc.kill()
        raise RuntimeError(
            f"captionist live never recorded: {proc.communicate()[1].decode(errors='replace')}"
        )
    started = time.monotonic()
    player = subprocess.Popen(["sh", "-c", " ".join(play)], env=pulse.env())
    text = ""
    at: list[float] = []  # when each word's first character was read
    fd = proc.stdout.fileno()
    while True:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if not ready:
            if proc.poll() is not None:
                break
            continue
        chunk = os.read(fd, 4096).decode(errors="replace").replace(",", " ").replace(".", " ")
        if not chunk:
            break
        now = time.monotonic()
        for ch in chunk:
            if not ch.isspace() and (not text or text[-1].isspace()):
                at.append(now)
            text += ch
    words = text.split()
    player.wait(timeout=60)
    stderr = proc.stderr.read().decode(errors="replace")
    return LiveRun([w.lower() for w in words], at, stderr, proc.wait(timeout=30)), started


def sentences_wav(n: int, gap_s: float, path: Path) -> tuple[list[str], list[float]]:
    """All held-out sentences ``< n`` in one 16 kHz file with ``gap_s`` of digital silence between
    them; returns their words and each word's end (seconds into the file)."""
    pieces = [np.zeros(int(START_GRACE_S * SAMPLE_RATE), np.float32)]
    pos = pieces[0].size
    words: list[str] = []
    ends: list[float] = []
    with EspeakPool() as pool:
        for i in range(n):
            u = heldout_sentence(i, pool)
            for w in u.words:
                words.append(w.word)
                ends.append((pos + w.end) / SAMPLE_RATE)
            pieces += [u.audio, np.zeros(int(gap_s * SAMPLE_RATE), np.float32)]
            pos += u.audio.size + pieces[-1].size
    sf.write(path, np.concatenate(pieces), SAMPLE_RATE, subtype="PCM_16")
    return words, ends


def evaluate(model: Path, n: int, delays_ms: list[int], gap_s: float, phrases: bool) -> dict:
    results: dict = {"sentences": [], "phrases": []}
    with tempfile.TemporaryDirectory(prefix="cap-live-eval-") as tmp:
        work = Path(tmp)
        wav = work / "heldout.wav"
        ref, ends = sentences_wav(n, gap_s, wav)
        seconds = sf.info(str(wav)).duration
        with PulseServer.start(work / "pulse") as pulse:
            pulse.add_null_sink(SINK)
            for delay in delays_ms:
                play = ["paplay", f"--device={SINK}", str(wav)]
                run, started = run_session(pulse, model, delay, seconds + END_GRACE_S, play, work)
                if run.returncode != 0:
                    raise RuntimeError(f"captionist live failed ({run.returncode}): {run.stderr.strip()}")
                errors, pairs = align(ref, run.words)
                lat = np.array([1000.0 * (run.at[h] - (started + ends[r])) for r, h in pairs])
                results["sentences"].append({
                    "delay_ms": delay, "sentences": n, "words": len(ref), "printed": len(run.words),
                    "wer": errors / max(1, len(ref)),
                    "latency_mean_ms": float(lat.mean()) if lat.size else float("nan"),
                    "latency_p90_ms": float(np.percentile(lat, 90)) if lat.size else float("nan"),
                })  # fmt: skip
                print(json.dumps(results["sentences"][-1]), flush=True)
                if phrases:
                    for phrase in PHRASES:
                        say = ["espeak-ng", "--stdout", f"'{phrase}'", "|", "paplay", f"--device={SINK}"]
                        run, _ = run_session(pulse, model, delay, 4.0 + 0.45 * len(phrase.split()), say, work)
                        expected = phrase.replace(",", "").split()
                        results["phrases"].append({
                            "delay_ms": delay, "phrase": phrase, "heard": " ".join(run.words),
                            "exact": run.words == expected,
                        })  # fmt: skip
                        print(json.dumps(results["phrases"][-1]), flush=True)
    return results


def table(results: dict) -> str:
    lines = [
        "| delay | sentences | words | WER | mean word latency | p90 latency |",
        "|---|---|---|---|---|---|",
    ]
    for r in results["sentences"]:
        lines.append(
            f"| {r['delay_ms']} ms | {r['sentences']} | {r['words']} | {100 * r['wer']:.1f} % | "
            f"{r['latency_mean_ms']:.0f} ms | {r['latency_p90_ms']:.0f} ms |"
        )
    if results["phrases"]:
        lines += ["", "| delay | phrase | heard | word for word |", "|---|---|---|---|"]
        for r in results["phrases"]:
            lines.append(
                f"| {r['delay_ms']} ms | {r['phrase']} | {r['heard']} | {'yes' if r['exact'] else 'no'} |"
            )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", type=Path, default=ROOT / "app" / "captionist" / "models_data" / "demo.gguf")
    ap.add_argument("--n", type=int, default=45, help="held-out sentences per delay")
    ap.add_argument("--delays", type=int, nargs="+", default=[240, 480, 960], help="delays in ms")
    ap.add_argument("--gap", type=float, default=1.0, help="seconds of silence between sentences")
    ap.add_argument("--no-phrases", action="store_true", help="skip the README's phrases")
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = ap.parse_args()
    t0 = time.monotonic()
    results = evaluate(args.model.resolve(), args.n, args.delays, args.gap, not args.no_phrases)
    print(table(results))
    print(f"({time.monotonic() - t0:.0f} s; model {args.model}; load average {os.getloadavg()[0]:.2f})")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
