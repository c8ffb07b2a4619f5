"""End to end: the caption page in a real browser while `captionist live --serve` captions speech.

espeak-ng speaks into a private PulseAudio null sink; ``captionist live --serve 0`` captions its
monitor with the demo model (a real process: capture, worker, engine, feed server); headless
Chromium (Debian's ``chromium``, driven by tools/headless_chromium.py) opens the printed URL before
the speech starts. The page must show the spoken words without a reload, hold exactly the captions
printed on stdout (every committed token once, in order), mark a spoken keyword, keep a transparent
background, and the screenshot it takes is kept (``CAPTIONIST_E2E_SHOTS``, else the test's folder)
for a person to look at.
"""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from tests.e2e.conftest import SINK, unavailable
from tests.e2e.pulse_server import PulseServer
from tests.e2e.test_live_capture import ESPEAK, EXPECTED_WORDS, MAY_MISS, SPEECH, in_order
from tools.headless_chromium import ChromiumUnavailable, HeadlessChromium

pytestmark = pytest.mark.e2e
CAPTURE_S = 12.0
KEYWORD = "captions"
PAGE_TEXT = "document.getElementById('captions').innerText"
TOKENS = "window.captionist.lines.flat().map(t => t.text || '').join('')"


def png_pixel_alpha(png: bytes, x: int, y: int) -> int:
    """The alpha of pixel (x, y) of an 8-bit RGBA PNG (Chromium's screenshots), decoded with zlib."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", 0
    while pos < len(png):
        length, kind = struct.unpack(">I4s", png[pos : pos + 8])
        body = png[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, _, depth, colour = struct.unpack(">IIBB", body[:10])
            assert (depth, colour) == (8, 6), "not 8-bit RGBA"
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw, stride = zlib.decompress(idat), width * 4 + 1
    rows: list[bytearray] = []
    for r in range(y + 1):  # undo the PNG filters row by row (only as far as row y)
        line, kind = bytearray(raw[r * stride + 1 : (r + 1) * stride]), raw[r * stride]
        prev = rows[-1] if rows else bytearray(len(line))
        for i in range(len(line)):
            a = line[i - 4] if i >= 4 else 0
            b, c = prev[i], prev[i - 4] if i >= 4 else 0
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
    return rows[y][x * 4 + 3]


def test_the_caption_page_follows_a_live_session(pulse: PulseServer, model: Path, tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "captionist", "live", "--model", str(model), "--backend", "cpu",
           "--device", f"pulse:{SINK}.monitor", "--serve", "0", "--keyword", KEYWORD,
           "--duration", f"{CAPTURE_S:g}", "-o", str(tmp_path / "t.srt")]  # fmt: skip
    proc = subprocess.Popen(cmd, env=pulse.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline().strip()
        assert first.startswith("serving captions at http://127.0.0.1:"), (first, proc.stderr.read())
        url = first.split()[-1]
        try:
            browser = HeadlessChromium(width=1000, height=240)
            browser.start()
        except ChromiumUnavailable as exc:
            unavailable(f"the caption page test needs a browser: {exc}")
        with browser:
            browser.open(url)
            assert pulse.wait_for_recording(timeout_s=30), "captionist never opened the monitor source"
            pulse.say(SPEECH, SINK, espeak_args=ESPEAK)
            enough = len(EXPECTED_WORDS) - MAY_MISS
            browser.wait_for(f"{PAGE_TEXT}.split(/\\s+/).length >= {enough}", timeout_s=60)
            shots = Path(os.environ.get("CAPTIONIST_E2E_SHOTS") or tmp_path)
            shots.mkdir(parents=True, exist_ok=True)
            shot = browser.screenshot(shots / "caption_page.png")  # while the session runs
            stdout, stderr = proc.communicate(timeout=90)
            assert proc.returncode == 0, stderr
            page_words = browser.evaluate(TOKENS).split()
            page_text = browser.evaluate(PAGE_TEXT)
            alerts = browser.evaluate(
                "[...document.querySelectorAll('#captions .alert')].map(s => s.textContent)"
            )
            reloaded = browser.evaluate("performance.getEntriesByType('navigation').length")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    printed = stdout.split()
    assert page_words == printed, f"page {page_words} != printed {printed}"  # every token once, in order
    missing = in_order(EXPECTED_WORDS, " ".join(page_words))
    assert len(missing) <= MAY_MISS, f"the page never showed {missing}: {page_text!r}"
    assert page_text.split() == printed[-len(page_text.split()) :]  # the visible lines: the newest words
    if KEYWORD in printed:
        assert alerts == [KEYWORD] * printed.count(KEYWORD) and f'keyword "{KEYWORD}"' in stderr
    assert reloaded == 1
    assert png_pixel_alpha(shot.read_bytes(), 5, 5) == 0  # a transparent page around the caption box
