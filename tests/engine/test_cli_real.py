"""The CLI end to end with real model files: convert, quantize, transcribe (reference ids)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from .conftest import AUDIO, REFERENCE, load_expected


def captionist(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "captionist", *map(str, args)], capture_output=True, text=True
    )


def test_convert_quantize_transcribe(tmp_path: Path) -> None:
    f32 = tmp_path / "m.gguf"
    r = captionist("convert", REFERENCE / "tiny_small" / "mistral", "-o", f32, "--outtype", "f32")
    assert r.returncode == 0, r.stderr
    case = next(
        c
        for c in load_expected("tiny_small")["cases"]
        if c["clip"] == "speech_mid.wav" and c["delay_tokens"] == 2
    )
    r = captionist(
        "transcribe", AUDIO / case["clip"], "--model", f32, "--delay-ms", "160", "--format", "json"
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["token_ids"] == case["token_ids"]
    assert out["text"] == case["text"]

    q = tmp_path / "q.gguf"
    r = captionist("quantize", f32, q, "Q8_0")
    assert r.returncode == 0, r.stderr
    r = captionist(
        "transcribe", AUDIO / "speech_short.wav", "--model", q, "--format", "srt", "-o", tmp_path / "o.srt"
    )
    assert r.returncode == 0, r.stderr
    assert "-->" in (tmp_path / "o.srt").read_text()


def test_bad_model_file_is_one_clear_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF" + bytes(64))
    r = captionist("transcribe", AUDIO / "speech_short.wav", "--model", bad)
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("captionist: error:"), r.stderr
