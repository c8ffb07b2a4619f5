"""What one paint of the caption overlay costs as captions come in, with each word's look kept as an
image and with every word drawn again on every paint.

    python bench/bench_overlay_paint.py                       # 3 lines at 28 px, 900 px wide
    python bench/bench_overlay_paint.py --lines 2 --font-size 40 --width 1400 --captions 2000

The overlay (offscreen Qt, outline and shadow on, as the defaults) is given one word per caption
from an English paragraph, with an end of utterance every 14 words, and repainted after each, as a
live session does; ``repaint`` is timed. Run twice in the same process: with ``WordImages`` keeping
the drawn words (the app's way), then drawing every word again on every paint (stroked and filled,
as before stop 40, then placed as an image). Printed: ms per paint for both, the ratio, and how
many words were drawn.

2026-12-05, this 2-vCPU VM (software painter), load 0.7-1.0: defaults: kept 0.68 ms a paint (84
words drawn in all), drawn again 12.43 ms (56,311 drawn), 18.4x; ``QT_SCALE_FACTOR=2`` with
``--font-size 60 --width 1800 --captions 600``: 6.69 ms against 44.88 ms, 6.7x (a word's newest and
plain looks are two images, so each caption draws about one and a half large words). The code
before stop 40, which also laid out the whole kept tail on every paint, took 14.7 ms a paint with
the defaults.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "app")]

PARAGRAPH = (
    "so the plan for the next quarter is to ship the new release before the holidays and then spend "
    "january on the feedback we get from the first customers who try it in their offices we also "
    "need to hire two more engineers and find a bigger room for the team meetings"
)


def paint_ms(lines: int, font_size: int, width: int, captions: int, keep: bool) -> tuple[float, int]:
    from PySide6.QtWidgets import QApplication

    from captionist.engine import Token
    from captionist.pipeline.events import CaptionUpdate
    from captionist.settings import OverlaySettings
    from captionist.ui.overlay import CaptionOverlay
    from captionist.ui.word_images import WordImages

    class DrawEveryTime(WordImages):
        """Keeps nothing: every word of every paint is drawn (stroked and filled) again."""

        def get(self, text, look, device_pixel_ratio=1.0):  # type: ignore[no-untyped-def]
            self.drawn += 1
            return self._draw(text, look, device_pixel_ratio)

    overlay = CaptionOverlay(OverlaySettings(lines=lines, font_size=font_size))
    if not keep:
        overlay._word_images = DrawEveryTime()
    overlay.resize(width, overlay.height())
    overlay.show()
    QApplication.processEvents()  # shown: repaint paints from here on
    words = PARAGRAPH.split()
    text, spent = "", 0.0
    for i in range(captions):
        word = " " + words[i % len(words)]
        text += word
        ends = [1] if i % 14 == 13 else []
        overlay.show_update(CaptionUpdate(i + 1, text, word, [Token(i, word, 0)], utterance_ends=ends))
        start = time.perf_counter()
        overlay.repaint()
        spent += time.perf_counter() - start
    overlay.close()
    return 1000 * spent / captions, overlay._word_images.drawn


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lines", type=int, default=3)
    ap.add_argument("--font-size", type=int, default=28)
    ap.add_argument("--width", type=int, default=900)
    ap.add_argument("--captions", type=int, default=3000)
    args = ap.parse_args()
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    from captionist.qt_none_guard import guard_none_refcount

    app = QApplication.instance() or QApplication([])
    guard_none_refcount()
    print(f"load average {os.getloadavg()[0]:.2f}; {args.captions} captions, {args.lines} lines at "
          f"{args.font_size} px, {args.width} px wide")  # fmt: skip
    shape = (args.lines, args.font_size, args.width, args.captions)
    kept_ms, kept_drawn = paint_ms(*shape, keep=True)
    none_ms, none_drawn = paint_ms(*shape, keep=False)
    app.processEvents()
    print(f"words kept as images: {kept_ms:.2f} ms a paint ({kept_drawn} words drawn)")
    print(f"every word drawn again: {none_ms:.2f} ms a paint ({none_drawn} words drawn)")
    print(f"ratio {none_ms / kept_ms:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
