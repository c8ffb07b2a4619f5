"""End to end: ``captionist live`` with two ``--device`` options mixes two real sources.

A private PulseAudio daemon gets two null sinks; the first half of ``SPEECH`` is spoken into one,
the second half into the other, while ``captionist live`` records both monitors at once (two
PortAudio streams on their own clocks, the mixer, the worker, the demo model). Every word must
come back in order: the words of either half can only have come through its own source.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from captionist.transcript import parse
from tests.e2e.conftest import SINK, start_pulse
from tests.e2e.test_live_capture import ESPEAK, EXPECTED_WORDS, MAY_MISS, captionist_cmd, in_order

pytestmark = pytest.mark.e2e

OTHER = "captionist_e2e_b"
FIRST, SECOND = "hello world start captions", "one two three stop"
CAPTURE_S = 14.0


def test_live_mixes_two_sources(model: Path, tmp_path: Path) -> None:
    with start_pulse(tmp_path / "pulse") as pulse:
        pulse.add_null_sink(OTHER)
        output = tmp_path / "mixed.srt"
        cmd = captionist_cmd(
            "live", "--model", str(model), "--device", f"pulse:{SINK}.monitor",
            "--device", f"pulse:{OTHER}.monitor", "-o", str(output), "--duration", f"{CAPTURE_S:g}",
            "--backend", "cpu",
        )  # fmt: skip
        proc = subprocess.Popen(
            cmd, env=pulse.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path
        )
        try:
            both = pulse.wait_for_recording(timeout_s=30, streams=2)
            if both:
                pulse.say(FIRST, SINK, espeak_args=ESPEAK)
                pulse.say(SECOND, OTHER, espeak_args=ESPEAK)
            stdout, stderr = proc.communicate(timeout=90)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert both, f"captionist never opened both monitor sources: {stderr}"
    assert proc.returncode == 0, stderr
    assert f"listening to Monitor of {SINK} (system audio) + Monitor of {OTHER} (system audio)" in stderr
    text = " ".join(c.one_line for c in parse("srt", output.read_text(encoding="utf-8")))
    missing = in_order(EXPECTED_WORDS, text)
    assert len(missing) <= MAY_MISS, f"words not heard: {missing}; transcript: {text!r}; stdout: {stdout!r}"
