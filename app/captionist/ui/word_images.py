"""Caption words drawn once and kept as images: the overlay draws the same few words on every paint.

Usage::

    images = WordImages()
    look = WordLook(font, "#ffffff", outline_width=2.8, shadow=True)
    image, at = images.get("hello", look, device_pixel_ratio=2.0)
    painter.drawImage(QPointF(round(x), round(baseline)) + at, image)

A word is its text as a path (``QPainterPath.addText``), its shadow (the path filled 2 px down and
right in translucent black), its outline (the path stroked in near-black) and its fill, in that
order, antialiased, drawn at the pixel density of the screen it will be shown on. Stroking a text
path is most of what a paint costs (0.42 ms a word on this machine's software painter), and between
two captions all but the newest words are drawn again unchanged, so each look of a word is drawn
once; the images of the ``kept`` most recently used looks are kept. ``at`` is where the image's
top-left corner goes relative to the word's baseline origin. GUI thread only.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QImage, QPainter, QPainterPath, QPen

KEPT = 512
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


class WordImages:
    def __init__(self, kept: int = KEPT) -> None:
        self.kept = kept
        self.drawn = 0  # words drawn so far (the others came from the kept images)
        self._images: OrderedDict[tuple, tuple[QImage, QPointF]] = OrderedDict()

    def get(self, text: str, look: WordLook, device_pixel_ratio: float = 1.0) -> tuple[QImage, QPointF]:
        key = (text, look.key(), device_pixel_ratio)
        found = self._images.get(key)
        if found is not None:
            self._images.move_to_end(key)
            return found
        found = self._images[key] = self._draw(text, look, device_pixel_ratio)
        self.drawn += 1
        while len(self._images) > self.kept:
            self._images.popitem(last=False)
        return found

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
        return image, box.topLeft()
