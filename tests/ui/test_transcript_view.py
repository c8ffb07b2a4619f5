"""The transcript pane: Find says when nothing matches; each session starts under its date and time."""

from __future__ import annotations

from datetime import datetime

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from captionist.engine import Token
from captionist.pipeline.events import CaptionUpdate
from captionist.ui.transcript_view import TranscriptView


def _view(qtbot) -> TranscriptView:
    view = TranscriptView()
    qtbot.addWidget(view)
    return view


def _say(view: TranscriptView, rev: int, words: str) -> None:
    update = CaptionUpdate(revision=rev, text=words, new_text=words, new_tokens=[Token(1, words, 0)])
    view.append_update(update)


def test_find_says_no_match_and_keeps_the_selection(qtbot) -> None:
    view = _view(qtbot)
    _say(view, 1, "hello world hello")
    assert view.find("world") and view.find_status.text() == ""
    assert not view.find("budget")
    assert view.find_status.text() == "No match"
    assert view.text.textCursor().selectedText() == "world"  # what was found before stays selected
    view.search.setText("hel")
    assert view.find_status.text() == ""  # editing the search clears the message
    qtbot.keyClick(view.search, Qt.Key.Key_Return)
    assert view.find_status.text() == "" and view.text.textCursor().selectedText() == "hel"


def test_find_with_an_empty_field_says_nothing(qtbot) -> None:
    view = _view(qtbot)
    assert not view.find("") and view.find_status.text() == ""


def test_each_session_starts_with_its_date_time_and_sources(qtbot) -> None:
    view = _view(qtbot)
    view.begin_session("USB Mic", datetime(2024, 5, 1, 10, 0))
    _say(view, 1, "hello world")
    view.begin_session("USB Mic + Monitor of speakers", datetime(2024, 5, 1, 14, 30))
    _say(view, 1, "okay")
    assert view.plain_text().splitlines() == [
        "— 2024-05-01 10:00 · USB Mic —",
        "hello world",
        "",
        "— 2024-05-01 14:30 · USB Mic + Monitor of speakers —",
        "okay",
    ]


def test_appending_reads_only_the_last_line_so_a_long_session_stays_cheap(qtbot, monkeypatch) -> None:
    """Reading the whole text back per caption made each one cost 0.6 ms at the start of a meeting
    and 3.3 ms at three hours (bench/bench_long_meeting.py). Lines, breaks and session headers
    must come out as before without it."""
    view = _view(qtbot)
    view.begin_session("USB Mic", datetime(2024, 5, 1, 10, 0))
    for i in range(200):
        ends = [1] if i % 10 == 9 else []
        word = f" w{i}"
        update = CaptionUpdate(i + 1, word, word, [Token(i, word, i * 80)], utterance_ends=ends)
        view.append_update(update)
    whole = view.plain_text()

    def read_all() -> str:
        raise AssertionError("the whole transcript was read back")

    monkeypatch.setattr(view, "plain_text", read_all)
    monkeypatch.setattr(view.text, "toPlainText", read_all)
    view.append_update(CaptionUpdate(201, " late", " late", [Token(201, " late", 0)], utterance_ends=[0]))
    view.append_update(CaptionUpdate(202, " more", " more", [Token(202, " more", 0)], final=True))
    view.begin_session("USB Mic", datetime(2024, 5, 1, 11, 0))
    monkeypatch.undo()
    lines = view.plain_text().splitlines()
    assert view.plain_text().startswith(whole)
    assert lines[1] == " ".join(f"w{i}" for i in range(10))
    assert lines[20] == " ".join(f"w{i}" for i in range(190, 200))
    assert lines[21:] == ["late more", "", "— 2024-05-01 11:00 · USB Mic —"]


def test_a_final_update_with_nothing_said_adds_no_empty_line(qtbot) -> None:
    view = _view(qtbot)
    view.append_update(CaptionUpdate(0, "", "", [], final=True))
    assert view.plain_text() == ""


def _line_edges(view: TranscriptView) -> dict[str, tuple[float, float]]:
    """Each line's first row: how far its text is from the row's left and right edges."""
    edges = {}
    block = view.text.document().begin()
    while block.isValid():
        row = block.layout().lineAt(0)
        text = row.naturalTextRect()
        edges[block.text()] = (text.left() - row.x(), row.x() + row.width() - text.right())
        block = block.next()
    return edges


def test_arabic_and_hebrew_lines_start_at_the_right_edge(qtbot) -> None:
    """A right-to-left line starts at the right, where its reader looks for it (it hung off the left
    edge before); the others, and a right-to-left line still being spoken, keep to their start."""
    view = _view(qtbot)
    view.resize(600, 300)
    with qtbot.waitExposed(view):
        view.show()
    lines = ["hello everyone", "مرحبا بالجميع", "שלום לכולם", "ok 42"]
    for i, line in enumerate(lines):
        view.append_update(CaptionUpdate(i + 1, line, line, [Token(i, line, 0)], utterance_ends=[1]))
    view.append_update(CaptionUpdate(9, "كيف", "كيف", [Token(9, "كيف", 0)]))  # not ended yet
    edges = _line_edges(view)
    assert set(edges) >= {*lines, "كيف"}
    for line in ("hello everyone", "ok 42"):
        assert edges[line][0] == 0 and edges[line][1] > 300
    for line in ("مرحبا بالجميع", "שלום לכולם", "كيف"):
        assert edges[line][0] > 300 and abs(edges[line][1]) <= 3, (line, edges[line])


def test_a_right_to_left_line_that_wraps_fills_its_rows_and_ends_at_the_right(qtbot) -> None:
    view = _view(qtbot)
    view.resize(300, 300)
    with qtbot.waitExposed(view):
        view.show()
    long_line = " ".join(["مرحبا بالجميع"] * 12)
    view.append_update(CaptionUpdate(1, long_line, long_line, [Token(1, long_line, 0)], utterance_ends=[1]))
    layout = view.text.document().firstBlock().layout()
    assert layout.lineCount() >= 3
    for i in range(layout.lineCount()):
        row = layout.lineAt(i)
        assert abs(row.x() + row.width() - row.naturalTextRect().right()) <= 3


def test_ctrl_f_goes_to_the_search_and_f3_finds_the_next_match(qtbot) -> None:
    view = _view(qtbot)
    with qtbot.waitActive(view):  # shortcuts work in the active window
        view.show()
        view.activateWindow()
    _say(view, 1, "budget one budget two")
    view.search.setText("budget")
    view.text.setFocus()
    qtbot.keyClick(view.text, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    assert view.search.hasFocus() and view.search.selectedText() == "budget"
    view.text.setFocus()
    qtbot.keyClick(view.text, Qt.Key.Key_F3)
    first = view.text.textCursor().selectionStart()
    qtbot.keyClick(view.text, Qt.Key.Key_F3)
    assert view.text.textCursor().selectedText() == "budget"
    assert view.text.textCursor().selectionStart() > first  # the next one


def test_the_keyboard_moves_through_the_text_and_selects_it(qtbot) -> None:
    view = _view(qtbot)
    view.begin_session("USB Mic", datetime(2024, 5, 1, 10, 0))
    _say(view, 1, "hello world")
    view.text.setFocus()
    qtbot.keyClick(view.text, Qt.Key.Key_Home, Qt.KeyboardModifier.ControlModifier)
    qtbot.keyClick(view.text, Qt.Key.Key_Down)
    qtbot.keyClick(view.text, Qt.Key.Key_End, Qt.KeyboardModifier.ShiftModifier)
    assert view.text.textCursor().selectedText() == "hello world"
    assert view.plain_text().endswith("hello world")  # still read-only: nothing typed went in
    qtbot.keyClicks(view.text, "x")
    assert view.plain_text().endswith("hello world")


def test_the_view_follows_new_captions_unless_the_reader_scrolled_up(qtbot) -> None:
    view = _view(qtbot)
    view.resize(400, 200)
    with qtbot.waitExposed(view):
        view.show()
    bar = view.text.verticalScrollBar()
    for i in range(60):
        view.append_update(
            CaptionUpdate(i + 1, f"line {i}", f"line {i}", [Token(i, f"line {i}", 0)], utterance_ends=[1])
        )
    assert bar.maximum() > 0 and bar.value() == bar.maximum()  # following the end
    view.text.setFocus()
    qtbot.keyClick(view.text, Qt.Key.Key_Home, Qt.KeyboardModifier.ControlModifier)  # to read the start
    assert bar.value() == 0
    view.append_update(CaptionUpdate(61, "more", "more", [Token(61, "more", 0)], utterance_ends=[1]))
    assert bar.value() == 0  # left where the reader is
    qtbot.keyClick(view.text, Qt.Key.Key_End, Qt.KeyboardModifier.ControlModifier)  # back to the end
    view.append_update(CaptionUpdate(62, "newest", "newest", [Token(62, "newest", 0)], utterance_ends=[1]))
    assert bar.value() == bar.maximum()
    assert view.text.cursorRect().bottom() <= view.text.viewport().height()


def test_ctrl_plus_minus_and_the_wheel_size_the_text_within_bounds(qtbot) -> None:
    from PySide6.QtCore import QPoint, QPointF
    from PySide6.QtGui import QWheelEvent

    from captionist.ui.text_zoom import MAX_PT, MIN_PT

    view = _view(qtbot)
    with qtbot.waitActive(view):
        view.show()
        view.activateWindow()
    default = view.text.font().pointSizeF()
    sizes: list[float] = []
    view.zoom.changed.connect(sizes.append)
    view.text.setFocus()
    qtbot.keyClick(view.text, Qt.Key.Key_Plus, Qt.KeyboardModifier.ControlModifier)
    qtbot.keyClick(view.text, Qt.Key.Key_Equal, Qt.KeyboardModifier.ControlModifier)  # + without Shift
    assert view.text.font().pointSizeF() == default + 2 and sizes == [default + 1, default + 2]
    qtbot.keyClick(view.text, Qt.Key.Key_Minus, Qt.KeyboardModifier.ControlModifier)
    assert view.text.font().pointSizeF() == default + 1

    def wheel(dy: int) -> None:
        pos = QPointF(10, 10)
        event = QWheelEvent(pos, view.text.viewport().mapToGlobal(QPoint(10, 10)).toPointF(), QPoint(0, 0),
                            QPoint(0, dy), Qt.MouseButton.NoButton, Qt.KeyboardModifier.ControlModifier,
                            Qt.ScrollPhase.NoScrollPhase, False)  # fmt: skip
        QApplication.sendEvent(view.text.viewport(), event)

    for _ in range(200):
        wheel(120)
    assert view.text.font().pointSizeF() == MAX_PT
    for _ in range(200):
        wheel(-120)
    assert view.text.font().pointSizeF() == MIN_PT
    qtbot.keyClick(view.text, Qt.Key.Key_0, Qt.KeyboardModifier.ControlModifier)
    assert view.text.font().pointSizeF() == default and sizes[-1] == 0.0  # 0: the default again


def test_the_text_size_is_remembered_for_the_next_window(app_parts, qtbot) -> None:
    from captionist.ui.main_window import MainWindow

    win = app_parts[0]
    default = win.transcript.text.font().pointSizeF()
    with qtbot.waitSignal(win.settings_changed):
        win.transcript.zoom.step(4)
    assert win.settings.transcript_text_pt == default + 4
    again = MainWindow(win.controller, win.settings, list_sources=lambda: [], model_store=win.models.store)
    qtbot.addWidget(again)
    assert again.transcript.text.font().pointSizeF() == default + 4
