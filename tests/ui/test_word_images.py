"""Caption words drawn once and kept as images: the same pixels as drawing the word's path, and a
word is drawn again only when its look changes."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QPointF
from PySide6.QtGui import QColor, QFont, QImage, QPainter, QPainterPath, QPen

from captionist.engine import Token
from captionist.pipeline.events import CaptionUpdate
from captionist.settings import OverlaySettings
from captionist.ui.overlay import CaptionOverlay
from captionist.ui.word_images import OUTLINE_COLOR, SHADOW_COLOR, SHADOW_OFFSET, WordImages, WordLook


def _font() -> QFont:
    font = QFont()
    font.setPixelSize(28)
    font.setWeight(QFont.Weight.DemiBold)
    return font


def _pixels(image: QImage) -> np.ndarray:
    image = image.convertToFormat(QImage.Format.Format_RGBA8888)
    rows = np.frombuffer(image.constBits(), np.uint8).reshape(image.height(), image.bytesPerLine() // 4, 4)
    return rows[:, : image.width()].astype(int)


def _canvas() -> QImage:
    image = QImage(300, 80, QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(QColor("#333333"))
    return image


def test_a_kept_word_looks_as_its_path_drawn_in_place(qapp) -> None:
    look = WordLook(_font(), "#ffe066", outline_width=2.8, shadow=True)
    origin = QPointF(20, 50)
    direct = _canvas()
    p = QPainter(direct)
    p.setRenderHint(QPainter.RenderHint.Antialiasing)
    path = QPainterPath()
    path.addText(origin, look.font, "budget")
    p.fillPath(path.translated(SHADOW_OFFSET, SHADOW_OFFSET), SHADOW_COLOR)
    p.strokePath(path, QPen(OUTLINE_COLOR, look.outline_width))
    p.fillPath(path, QColor(look.color))
    p.end()
    kept = _canvas()
    image, at = WordImages().get("budget", look)
    p = QPainter(kept)
    p.drawImage(origin + at, image)
    p.end()
    diff = np.abs(_pixels(direct) - _pixels(kept))
    assert diff.max() <= 2  # rounding of one composition step, nothing more
    assert (_pixels(kept) != _pixels(_canvas())).any()


def test_each_look_of_a_word_is_drawn_once_and_the_oldest_looks_are_dropped(qapp) -> None:
    plain = WordLook(_font(), "#ffffff", 2.8, True)
    newest = WordLook(_font(), "#ffe066", 2.8, True)
    size = WordImages().get("hello", plain)[0].sizeInBytes()
    images = WordImages(kept_bytes=5 * size)
    first = images.get("hello", plain)
    assert images.get("hello", plain) is first and images.drawn == 1
    images.get("hello", newest)
    images.begin_paint()
    images.begin_paint()  # two paints later: the first two may go
    sharp = images.get("hello", newest, device_pixel_ratio=2.0)[0]
    assert sharp.devicePixelRatio() == 2.0 and sharp.width() == 2 * first[0].width()
    assert images.drawn == 3 and images.kept == 2  # four times the room: the oldest went
    images.get("hello", plain)  # dropped to make room: drawn again
    assert images.drawn == 4


def test_the_words_of_this_paint_and_the_last_stay_whatever_the_budget(qapp) -> None:
    plain = WordLook(_font(), "#ffffff", 2.8, True)
    images = WordImages(kept_bytes=1)
    images.begin_paint()
    for word in ("one", "two", "three"):
        images.get(word, plain)
    images.begin_paint()
    for word in ("one", "two", "three", "four"):
        images.get(word, plain)
    assert images.drawn == 4 and images.kept == 4
    images.begin_paint()
    images.get("four", plain)
    images.begin_paint()
    images.get("four", plain)
    images.get("five", plain)  # "one" .. "three" were last used two paints ago: they go
    assert images.drawn == 5 and images.kept == 2


def test_the_overlay_draws_only_the_words_whose_look_changed(qtbot) -> None:
    overlay = CaptionOverlay(OverlaySettings(lines=2, font_size=20))
    qtbot.addWidget(overlay)
    overlay.resize(600, overlay.height())
    overlay.show()
    text = " one two three"
    overlay.show_update(CaptionUpdate(1, text, text, [Token(1, text, 0)]))
    overlay.grab()
    drawn = overlay._word_images.drawn
    assert drawn == 3
    overlay.grab()
    assert overlay._word_images.drawn == drawn  # a paint with nothing new draws nothing
    overlay.show_update(CaptionUpdate(2, text + " four", " four", [Token(2, " four", 0)]))
    overlay.grab()
    assert overlay._word_images.drawn == drawn + 4  # "four", and three words no longer newest
