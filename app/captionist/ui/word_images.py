"""Caption words drawn once and kept as images: the overlay draws the same few words on every paint.

Usage::

    images = WordImages()
    images.begin_paint()                     # at the start of each paint
    look = WordLook(font, "#ffffff", outline_width=2.8, shadow=True)
    image, at = images.get("hello", look, device_pixel_ratio=2.0)
    painter.drawImage(QPointF(round(x), round(baseline)) + at, image)

A word is its text as a path (``QPainterPath.addText``), its shadow (the path filled 2 px down and
right in translucent black), its outline (the path stroked in near-black) and its fill, in that
order, antialiased, drawn at the pixel density of the screen it will be shown on. Stroking a text
path is most of what a paint costs (0.42 ms a word on this machine's software painter), and between
two captions all but the newest words are drawn again unchanged, so each look of a word is drawn
once; the most recently used images are kept, up to ``kept_bytes`` of pixels, and never fewer than
the words of this paint and the one before (large type on a dense screen needs more room). ``at``
is where the image's top-left corner goes relative to the word's baseline origin. GUI thread only.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QImage, QPainter, QPainterPath, QPen

KEPT_BYTES = 8 << 20  # pixels kept: some 650 words at 28 px, a few dozen at 60 px on a 2x screen
SHADOW_OFFSET = 2.0
SHADOW_COLOR = QColor(0, 0, 0, 160)
OUTLINE_COLOR = QColor(0, 0, 0, 230)


@dataclass(frozen=True)
class WordLook:
    """How a word is drawn: its font, fill colour, outline width (0: none) and shadow."""

    font: QFont
    color: str
    outline_width: float
    shadow: bool

    def key(self) -> tuple[str, str, float, bool]:
        return (self.font.key(), self.color, self.outline_width, self.shadow)


@dataclass
class _Kept:
    drawn: tuple[QImage, QPointF]  # what get() returns
    paint: int  # the paint that last used it


class WordImages:
    def __init__(self, kept_bytes: int = KEPT_BYTES) -> None:
        self.kept_bytes = kept_bytes
        self.drawn = 0  # words drawn so far (the others came from the kept images)
        self._images: OrderedDict[tuple, _Kept] = OrderedDict()  # least recently used first
        self._paint = 0
        self._bytes = 0

    def begin_paint(self) -> None:
        self._paint += 1

    @property
    def kept(self) -> int:
        """How many images are kept now."""
        return len(self._images)

    def get(self, text: str, look: WordLook, device_pixel_ratio: float = 1.0) -> tuple[QImage, QPointF]:
        key = (text, look.key(), device_pixel_ratio)
        kept = self._images.get(key)
        if kept is not None:
            self._images.move_to_end(key)
            kept.paint = self._paint
            return kept.drawn
        drawn = self._draw(text, look, device_pixel_ratio)
        self._images[key] = _Kept(drawn, self._paint)
        self.drawn += 1
        self._bytes += drawn[0].sizeInBytes()
        while self._bytes > self.kept_bytes:
            oldest = next(iter(self._images.values()))
            if oldest.paint >= self._paint - 1:
                break  # used by this paint or the last one: kept over the budget
            self._bytes -= self._images.popitem(last=False)[1].drawn[0].sizeInBytes()
        return drawn

    @staticmethod
    def _draw(text: str, look: WordLook, dpr: float) -> tuple[QImage, QPointF]:
        path = QPainterPath()
        path.addText(QPointF(0, 0), look.font, text)
        margin = look.outline_width / 2 + 1
        box = path.boundingRect().adjusted(-margin, -margin, margin, margin)
        if look.shadow:
            box = box.united(box.translated(SHADOW_OFFSET, SHADOW_OFFSET))
        left, top = math.floor(box.left()), math.floor(box.top())
        box = QRectF(left, top, math.ceil(box.right()) - left, math.ceil(box.bottom()) - top)
        image = QImage(
            max(1, math.ceil(box.width() * dpr)),
            max(1, math.ceil(box.height() * dpr)),
            QImage.Format.Format_ARGB32_Premultiplied,
        )
        image.setDevicePixelRatio(dpr)
        image.fill(Qt.GlobalColor.transparent)
        p = QPainter(image)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        p.translate(-box.left(), -box.top())
        if look.shadow:
            p.fillPath(path.translated(SHADOW_OFFSET, SHADOW_OFFSET), SHADOW_COLOR)
        if look.outline_width > 0:
            p.strokePath(path, QPen(OUTLINE_COLOR, look.outline_width))
        p.fillPath(path, QColor(look.color))
        p.end()
        # a copy: the image painted on keeps its paint engine (some 30 KB) for as long as it lives
        return image.copy(), box.topLeft()
