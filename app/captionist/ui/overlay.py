"""The caption overlay: a frameless, translucent, always-on-top window showing the newest lines.

Usage::

    overlay = CaptionOverlay(settings.overlay)     # OverlaySettings, edited in place
    controller.caption.connect(overlay.show_update)
    overlay.set_click_through(True)                # mouse passes through; tray / shortcut undoes it
    overlay.set_global_shortcut("Ctrl+Alt+Shift+T")  # the way back that the click-through hint names
    overlay.apply_position("bottom")               # top | bottom | centre on the current screen

Text is word-wrapped to the window width (a word wider than the window, such as a long link, is
cut into pieces that fit; Chinese and Japanese break between characters, ``transcript.unspaced``)
and the last ``lines`` lines are drawn, so new text scrolls up a line at a time without jumping. A
line of a right-to-left script is drawn from the right edge with its words in visual order
(``bidi_line``; ``placed`` says where each word goes). Where the model ended an utterance
(``CaptionUpdate.new_lines``) the next words start a new line. A gap (audio not transcribed) is
one line that is never wrapped, so its start (how many seconds) cannot scroll away from its end:
``AudioGap.label`` where it fits, else ``short_label``, else that cut short with an ellipsis. The
words appended by the latest update are drawn in ``newest_color``, the words of keyword alerts
(``set_keywords``) in their colour and underlined. Dragging moves the window, dragging the bottom-right
corner resizes it; the geometry is stored per screen name in ``OverlaySettings.geometry`` and
restored on that screen. On Wayland the drag is handed to the compositor (``overlay_drag``), which
places the window itself, so nothing is remembered there; ``platform_name`` (default
``QGuiApplication.platformName``) and ``window_handle`` are injectable for tests. Each time it is
shown, ``pin`` (default ``overlay_pin.overlay_pin_for_platform()``: NSWindow flags on macOS,
``SetWindowPos(HWND_TOPMOST)`` on Windows, nothing elsewhere) keeps it above full-screen apps; its
result is kept in ``pin_result`` and a failure in ``pin_error`` (the overlay still shows; a failed
pin is tried once more on the next event-loop turn, when the native window is fully set up). Thread:
GUI thread only.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from typing import NamedTuple

from PySide6.QtCore import QPoint, QPointF, QRect, QRectF, Qt, QTimer, Signal
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontMetricsF,
    QGuiApplication,
    QMouseEvent,
    QPainter,
    QShowEvent,
)
from PySide6.QtWidgets import QWidget

from captionist.alerts.keywords import KeywordList
from captionist.pipeline.events import CaptionUpdate
from captionist.pipeline.signals import emit
from captionist.settings import OverlaySettings
from captionist.transcript import unspaced
from captionist.ui.bidi_line import line_is_rtl, visual_order
from captionist.ui.overlay_drag import (
    WAYLAND_OVERLAY_NOTE,
    DragMode,
    SystemDragWindow,
    compositor_places_windows,
    start_system_drag,
)
from captionist.ui.overlay_pin import OverlayPin, overlay_pin_for_platform
from captionist.ui.word_images import WordImages, WordLook

# what continues the character before it: variation selectors, the zero-width joiner, skin tones
_JOINING = {"\u200d", "\ufe0e", "\ufe0f", *map(chr, range(0x1F3FB, 0x1F400))}


def _clusters(word: str) -> list[str]:
    """``word`` as the runs of code points a line may not be broken inside."""
    out: list[str] = []
    for ch in word:
        if out and (unicodedata.combining(ch) or ch in _JOINING or out[-1][-1] == "\u200d"):
            out[-1] += ch
        else:
            out.append(ch)
    return out


class CaptionWord(NamedTuple):
    text: str
    newest: bool  # added by the latest update
    alert: bool  # part of a keyword
    spaced: bool = True  # a space before it (none between the characters of Chinese or Japanese)


GAP_MARK = "\ue000"  # starts a gap's line in the overlay's text: GAP_MARK label GAP_SHORT short label
GAP_SHORT = "\ue001"


PADDING = 12
GRIP = 16
TAIL_CHARS = 4000  # only the end of a long session is ever kept
WIDTHS_KEPT = 20_000  # word widths remembered for the current font (then forgotten and measured again)
POSITIONS = ("top", "bottom", "centre")
CLICK_THROUGH_SHORTCUT = "Ctrl+Shift+T"  # the main window's shortcut; the hint names it if no global one
HINT_MS = 2500  # how long the click-through hint stays on the overlay


class CaptionOverlay(QWidget):
    settings_changed = Signal()  # geometry, click-through or appearance changed (save settings)
    click_through_changed = Signal(bool)  # the one click-through state, whoever changed it

    def __init__(
        self,
        settings: OverlaySettings,
        parent: QWidget | None = None,
        *,
        platform_name: Callable[[], str] = QGuiApplication.platformName,
        window_handle: Callable[[], SystemDragWindow | None] | None = None,
        pin: OverlayPin | None = overlay_pin_for_platform(),  # noqa: B008 - chosen once per platform
    ) -> None:
        super().__init__(parent)
        self._pin = pin
        self.pin_result: object = None  # what the last pin read back
        self.pin_error: str | None = None
        self.settings = settings
        self._platform_name = platform_name
        self._window_handle = window_handle or self.windowHandle
        self.setWindowTitle("Captionist captions")
        self.setWindowFlags(
            Qt.WindowType.FramelessWindowHint | Qt.WindowType.WindowStaysOnTopHint | Qt.WindowType.Tool
        )
        self.setAttribute(Qt.WidgetAttribute.WA_TranslucentBackground)
        self.setAttribute(Qt.WidgetAttribute.WA_ShowWithoutActivating)
        self.setAttribute(Qt.WidgetAttribute.WA_MacAlwaysShowToolWindow)  # macOS: not hidden in background
        self.setMinimumSize(200, 40)
        self._keywords = KeywordList()
        self._alert_color = "#ff9f43"
        self._text = ""
        self._newest = 0  # characters at the end of _text that the latest update added
        self._widths_key: str | None = None  # the font whose word widths _widths holds
        self._widths: dict[str, float] = {}
        self._word_images = WordImages()  # each word's look drawn once (the outline is the costly part)
        self._revision = 0
        self._drag: tuple[QPoint, QRect, bool] | None = None  # press pos, start geometry, resizing
        self._placed = False  # restore_geometry / apply_position have put it on a screen
        self._hint = ""  # shown briefly over the captions (click-through changed)
        self._global_shortcut: str | None = None  # the global click-through shortcut, while it works
        self._hint_timer = QTimer(self)
        self._hint_timer.setSingleShot(True)
        self._hint_timer.setInterval(HINT_MS)
        self._hint_timer.timeout.connect(self._clear_hint)
        self.apply_settings()
        self.set_click_through(settings.click_through, save=False)
        if self.compositor_places_windows():
            self.setToolTip(WAYLAND_OVERLAY_NOTE)

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 - Qt override
        super().showEvent(event)
        if self._pin is not None and not self._apply_pin():
            QTimer.singleShot(0, self._apply_pin)  # once more when the native window is fully up

    def _apply_pin(self) -> bool:
        """Run the platform pin; False (and ``pin_error`` says why) if it failed."""
        if self._pin is None or not self.isVisible():
            return True
        try:
            self.pin_result, self.pin_error = self._pin(self), None
        except Exception as exc:  # a missing pyobjc / user32 failure: keep Qt's flags, say why
            self.pin_result, self.pin_error = None, str(exc)
            return False
        return True

    def compositor_places_windows(self) -> bool:
        """Whether the compositor, not the overlay, decides where it goes and if it stays on top."""
        return compositor_places_windows(self._platform_name())

    # --- content ------------------------------------------------------------------------------
    def show_update(self, update: CaptionUpdate) -> None:
        """Show a new stream revision (older revisions than the one shown are ignored)."""
        if update.revision < self._revision:
            return
        if update.gap is not None:  # a line of its own
            added = f"\n{GAP_MARK}{update.gap.label()}{GAP_SHORT}{update.gap.short_label()}\n"
        else:
            added = "\n".join(update.new_lines())  # a line break where an utterance ended
        if added.strip():
            self._newest = len(added.lstrip("\n"))
        if added:
            self._text = (self._text + added)[-TAIL_CHARS:]
        self._revision = update.revision
        self.update()

    def clear(self) -> None:
        self._text, self._newest, self._revision = "", 0, 0
        self.update()

    def _font(self) -> QFont:
        font = QFont(self.settings.font_family)
        font.setPixelSize(min(400, max(6, int(self.settings.font_size))))
        font.setWeight(QFont.Weight.DemiBold)
        return font

    def set_keywords(self, keywords: KeywordList, color: str) -> None:
        """Draw the words of ``keywords`` in ``color`` (keyword alerts)."""
        self._keywords, self._alert_color = keywords, color
        self.update()

    def layout_lines(self) -> list[list[CaptionWord]]:
        """The visible lines as words (newest? a keyword?), wrapped to the current width. Each
        utterance (paragraph) is wrapped from its start, so its lines do not move as it grows; only
        the utterances that reach the visible lines are laid out, newest first."""
        font = self._font()
        metrics = QFontMetricsF(font)
        advance = self._advance_of(font, metrics)
        width = max(10.0, self.width() - 2 * PADDING)
        newest_from = len(self._text) - self._newest
        wanted = self.settings.lines
        lines: list[list[CaptionWord]] = []
        end = len(self._text)
        for paragraph in reversed(self._text.split("\n")):
            if len(lines) >= wanted:
                break
            start = end - len(paragraph)
            end = start - 1  # the line break before it
            lines[:0] = self._paragraph_lines(paragraph, start, newest_from, metrics, advance, width)
        return lines[-wanted:]

    def _advance_of(self, font: QFont, metrics: QFontMetricsF) -> Callable[[str], float]:
        """``metrics.horizontalAdvance``, remembered per text for ``font``: a paint measures the
        same words again and again."""
        key = font.key()
        if key != self._widths_key or len(self._widths) > WIDTHS_KEPT:
            self._widths_key, self._widths = key, {}
        widths = self._widths

        def advance(text: str) -> float:
            w = widths.get(text)
            if w is None:
                w = widths[text] = metrics.horizontalAdvance(text)
            return w

        return advance

    def _paragraph_lines(
        self,
        paragraph: str,
        start: int,
        newest_from: int,
        metrics: QFontMetricsF,
        advance: Callable[[str], float],
        width: float,
    ) -> list[list[CaptionWord]]:
        """``paragraph`` (starting at ``start`` in the kept text) wrapped to ``width``."""
        if GAP_SHORT in paragraph:  # a gap: one line (none where the kept tail cut its start off)
            if not paragraph.startswith(GAP_MARK):
                return []
            line = self._gap_line(paragraph, metrics, width)
            return [[CaptionWord(line, start + len(paragraph) > newest_from, False)]]
        lines: list[list[CaptionWord]] = [[]]
        used = 0.0
        space = advance(" ")
        spans = unspaced.word_spans(paragraph)  # words; in Chinese, characters
        units = [paragraph[a:b] for a, b in spans]
        alert = self._keywords.marks(units)  # per utterance
        for k, ((a, b), unit) in enumerate(zip(spans, units, strict=True)):
            pos = start + b
            spaced = a == 0 or paragraph[a - 1].isspace()  # not inside a run of Chinese
            for piece_index, piece in enumerate(self._pieces(unit, advance, width)):
                first = spaced and piece_index == 0
                gap = space if first and lines[-1] else 0.0
                w = advance(piece)
                if lines[-1] and used + gap + w > width:
                    lines.append([])
                    used, gap = 0.0, 0.0
                used += gap + w
                lines[-1].append(CaptionWord(piece, pos > newest_from, alert[k], first))
        return [line for line in lines if line]

    def placed(self, line: list[CaptionWord], metrics: QFontMetricsF) -> list[tuple[float, CaptionWord]]:
        """Where each word of ``line`` is drawn: (x, word), left to right on screen. A line of a
        right-to-left script is laid out from the right edge in its visual order (``bidi_line``)."""
        order = visual_order([w.text for w in line])
        space = metrics.horizontalAdvance(" ")
        placed: list[tuple[float, CaptionWord]] = []
        x = 0.0
        for position, index in enumerate(order):
            if position:
                neighbour = order[position - 1]
                joined = abs(neighbour - index) == 1 and not line[max(neighbour, index)].spaced
                x += 0.0 if joined else space
            placed.append((x, line[index]))
            x += metrics.horizontalAdvance(line[index].text)
        start = self.width() - PADDING - x if line_is_rtl([w.text for w in line]) else float(PADDING)
        return [(start + dx, word) for dx, word in placed]

    @staticmethod
    def _pieces(word: str, advance: Callable[[str], float], width: float) -> list[str]:
        """``word``, or where it is wider than a line (a long link, say), cut into pieces that each
        fit, never inside a character sequence (a letter and its combining marks, joined emoji)."""
        if advance(word) <= width:
            return [word]
        pieces = [""]
        for cluster in _clusters(word):
            if pieces[-1] and advance(pieces[-1] + cluster) > width:
                pieces.append("")
            pieces[-1] += cluster
        return pieces

    @staticmethod
    def _gap_line(paragraph: str, metrics: QFontMetricsF, width: float) -> str:
        label, _, short = paragraph.removeprefix(GAP_MARK).partition(GAP_SHORT)
        for text in (label, short):
            if metrics.horizontalAdvance(text) <= width:
                return text
        return metrics.elidedText(short, Qt.TextElideMode.ElideRight, width)

    def visible_lines(self) -> list[str]:
        return [
            "".join((" " if w.spaced and i else "") + w.text for i, w in enumerate(line))
            for line in self.layout_lines()
        ]

    def newest_words(self) -> list[str]:
        return [w.text for line in self.layout_lines() for w in line if w.newest]

    def alert_words(self) -> list[str]:
        """The visible words drawn as keywords."""
        return [w.text for line in self.layout_lines() for w in line if w.alert]

    # --- appearance ---------------------------------------------------------------------------
    def apply_settings(self) -> None:
        """Re-read ``self.settings`` (lines, font, colours, opacity) and resize to fit the lines."""
        s = self.settings
        s.lines = min(10, max(1, int(s.lines)))
        s.background_opacity = min(1.0, max(0.0, float(s.background_opacity)))
        height = int(QFontMetricsF(self._font()).lineSpacing() * s.lines + 2 * PADDING)
        self._fit_on_screen(max(self.width(), 400), height)
        self.update()

    def _fit_on_screen(self, width: int, height: int) -> None:
        """Take the size ``width`` x ``height`` and stay inside the screen's available area.

        An overlay in the lower half of its screen (or placed "bottom") keeps its bottom edge and
        grows upwards; one higher up keeps its top edge. Once placed, the new geometry is saved.
        """
        old = self.geometry()
        screen = self.screen() or QGuiApplication.primaryScreen()
        if screen is None:
            self.resize(width, height)
            return
        area = screen.availableGeometry()
        w, h = min(width, area.width()), min(height, area.height())
        low = self.settings.position == "bottom" or old.center().y() > area.center().y()
        y = old.bottom() + 1 - h if low else old.y()
        x = min(max(old.x(), area.x()), area.x() + area.width() - w)
        y = min(max(y, area.y()), area.y() + area.height() - h)
        self.setGeometry(x, y, w, h)
        if self._placed and self.geometry() != old:
            self._remember_geometry()

    def paintEvent(self, event: object) -> None:  # noqa: N802 - Qt override
        s = self.settings
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        bg = QColor(s.background_color)
        bg.setAlphaF(s.background_opacity)
        p.setPen(Qt.PenStyle.NoPen)
        p.setBrush(bg)
        p.drawRoundedRect(QRectF(self.rect()), 8, 8)
        font = self._font()
        metrics = QFontMetricsF(font)
        lines = self.layout_lines()
        y = self.height() - PADDING - metrics.descent() - metrics.lineSpacing() * (len(lines) - 1)
        outline = max(2.0, font.pixelSize() / 10) if s.outline else 0.0
        dpr = self.devicePixelRatioF()
        self._word_images.begin_paint()
        for line in lines:
            for x, word in self.placed(line, metrics):
                colour = self._alert_color if word.alert else s.newest_color if word.newest else s.text_color
                image, at = self._word_images.get(word.text, WordLook(font, colour, outline, s.shadow), dpr)
                p.drawImage(QPointF(round(x * dpr) / dpr, round(y * dpr) / dpr) + at, image)  # whole pixels
                if word.alert:  # not by colour alone
                    width = metrics.horizontalAdvance(word.text)
                    p.fillRect(
                        QRectF(x, y + metrics.descent() / 2, width, max(2.0, font.pixelSize() / 14)),
                        QColor(colour),
                    )
            y += metrics.lineSpacing()
        if self._hint:
            self._paint_hint(p)
        p.end()

    def _paint_hint(self, p: QPainter) -> None:
        font = QFont(self.font())
        font.setPixelSize(14)
        font.setWeight(QFont.Weight.DemiBold)
        metrics = QFontMetricsF(font)
        room = max(40.0, self.width() - PADDING - 16)  # the box's margins: elide rather than clip
        text = metrics.elidedText(self._hint, Qt.TextElideMode.ElideRight, room)
        box = metrics.boundingRect(text).adjusted(-8, -4, 8, 4)
        box.moveTopLeft(QPointF(PADDING / 2, PADDING / 2))
        p.setPen(Qt.PenStyle.NoPen)
        p.setBrush(QColor(20, 60, 110, 230))
        p.drawRoundedRect(box, 4, 4)
        p.setFont(font)
        p.setPen(QColor("#ffffff"))
        p.drawText(box, Qt.AlignmentFlag.AlignCenter, text)

    def hint_text(self) -> str:
        """The hint shown over the captions now ("" when none)."""
        return self._hint

    def _clear_hint(self) -> None:
        self._hint = ""
        self.update()

    # --- click-through ------------------------------------------------------------------------
    def set_click_through(self, enabled: bool, save: bool = True) -> None:
        """Let mouse clicks pass to the windows below (undo from the tray menu or the shortcut).

        A change emits ``click_through_changed`` (Preferences and the tray show it) and, unless
        ``save`` is False (restoring at start), shows a brief hint on the overlay."""
        changed = enabled != self.is_click_through()
        visible = self.isVisible()
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents, enabled)
        self.setWindowFlag(Qt.WindowType.WindowTransparentForInput, enabled)
        if visible:
            self.show()  # changing window flags hides the window
        self.settings.click_through = enabled
        if changed and save:
            self._hint = self._click_through_hint(enabled)
            self._hint_timer.start()
            self.update()
        if changed:
            emit(self.click_through_changed, enabled)
        if save:
            emit(self.settings_changed)

    def set_global_shortcut(self, shortcut: str | None) -> None:
        """The global click-through shortcut now listened for (None: none), which the hint names."""
        self._global_shortcut = shortcut or None

    def _click_through_hint(self, enabled: bool) -> str:
        if not enabled:
            return "Click-through off — drag to move, corner to resize"
        if self._global_shortcut:
            return f"Click-through on — press {self._global_shortcut} to turn it off"
        return f"Click-through on — turn it off from the tray menu or {CLICK_THROUGH_SHORTCUT}"

    def is_click_through(self) -> bool:
        return bool(self.windowFlags() & Qt.WindowType.WindowTransparentForInput)

    # --- position and geometry ----------------------------------------------------------------
    def _screen_key(self) -> str:
        screen = self.screen() or QGuiApplication.primaryScreen()
        return screen.name() if screen else "default"

    def apply_position(self, preset: str) -> None:
        """Place the overlay at the top, bottom or centre of its current screen, full-ish width."""
        if preset not in POSITIONS:
            raise ValueError(f"position must be one of {', '.join(POSITIONS)}; got {preset!r}")
        screen = self.screen() or QGuiApplication.primaryScreen()
        area = screen.availableGeometry()
        w = min(area.width() - 40, max(self.width(), int(area.width() * 0.7)))
        h = self.height()
        x = area.x() + (area.width() - w) // 2
        margin = int(area.height() * 0.05)
        y = {
            "top": area.y() + margin,
            "bottom": area.bottom() - h - margin,
            "centre": area.y() + (area.height() - h) // 2,
        }[preset]
        self.setGeometry(x, y, w, h)
        self.settings.position = preset
        self._placed = True
        self._remember_geometry()

    def restore_geometry(self) -> None:
        """Use the geometry saved for this screen, else the position preset."""
        saved = self.settings.geometry.get(self._screen_key())
        if saved and len(saved) == 4:
            self.setGeometry(*saved)
            self._placed = True
            self._fit_on_screen(self.width(), self.height())  # saved with another screen size?
        else:
            self.apply_position(self.settings.position if self.settings.position in POSITIONS else "bottom")

    def _remember_geometry(self) -> None:
        g = self.geometry()
        self.settings.geometry[self._screen_key()] = [g.x(), g.y(), g.width(), g.height()]
        emit(self.settings_changed)

    def mousePressEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt override
        if event.button() == Qt.MouseButton.LeftButton:
            pos = event.position().toPoint()
            resizing = pos.x() >= self.width() - GRIP and pos.y() >= self.height() - GRIP
            mode = DragMode.RESIZE if resizing else DragMode.MOVE
            if self.compositor_places_windows() and start_system_drag(self._window_handle(), mode):
                self._drag = None  # the compositor has the drag; it tells us nothing to remember
                return
            self._drag = (event.globalPosition().toPoint(), self.geometry(), resizing)

    def mouseMoveEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt override
        if self._drag is None:
            return
        start, geometry, resizing = self._drag
        delta = event.globalPosition().toPoint() - start
        if resizing:
            self.resize(max(200, geometry.width() + delta.x()), max(40, geometry.height() + delta.y()))
        else:
            self.move(geometry.topLeft() + delta)

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt override
        if self._drag is not None:
            self._drag = None
            self.settings.position = "custom"
            self._remember_geometry()
