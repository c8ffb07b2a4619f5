"""A screen reader reads each new banner line out: problems at once, information politely; lines
added while the window is hidden are read when it appears; a line already read is not read again
unless it happens again. (tests/e2e/test_screen_reader.py checks that the announcement reaches
AT-SPI.)"""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QVBoxLayout, QWidget

from captionist.ui import banner as banner_module
from captionist.ui.announce import Urgency
from captionist.ui.banner import Banner, BannerKind, Problem


@pytest.fixture
def said(monkeypatch) -> list[tuple[str, Urgency]]:
    out: list[tuple[str, Urgency]] = []
    monkeypatch.setattr(
        banner_module, "announce", lambda widget, message, urgency: out.append((message, urgency))
    )
    return out


def _in_window(qtbot, kind: BannerKind) -> tuple[QWidget, Banner]:
    window = QWidget()
    qtbot.addWidget(window)
    banner = Banner(kind)
    QVBoxLayout(window).addWidget(banner)
    return window, banner


def test_a_problem_is_read_at_once_and_each_new_one_after_it(qtbot, said) -> None:
    window, banner = _in_window(qtbot, BannerKind.ERROR)
    window.show()
    banner.show_message("cannot open 'USB Mic'", Problem.SESSION)
    assert said == [("cannot open 'USB Mic'", Urgency.INTERRUPT)]
    banner.show_message("the model failed", Problem.MODEL)
    banner.resolve(Problem.SESSION)
    assert said[1:] == [("the model failed", Urgency.INTERRUPT)]
    banner.show_message("cannot open 'USB Mic'", Problem.SESSION)  # it happened again
    assert said[2:] == [("cannot open 'USB Mic'", Urgency.INTERRUPT)]


def test_lines_added_before_the_window_appears_are_read_when_it_does(qtbot, said) -> None:
    window, banner = _in_window(qtbot, BannerKind.INFO)
    banner.show_message("a session was recovered", Problem.RECOVERY)
    banner.show_message("gone before anyone saw it", Problem.MISSING_SOURCES)
    banner.resolve(Problem.MISSING_SOURCES)
    banner.show_message("the transcript folder is back", Problem.GENERAL)
    assert said == []
    window.show()
    assert said == [("a session was recovered\nthe transcript folder is back", Urgency.POLITE)]
    window.hide()
    window.show()
    assert len(said) == 1  # read once


def test_the_close_button_says_what_it_dismisses(qtbot) -> None:
    for kind, name in ((BannerKind.ERROR, "Dismiss the problems"), (BannerKind.INFO, "Dismiss the notices")):
        banner = Banner(kind)
        qtbot.addWidget(banner)
        assert banner.close_button.accessibleName() == name
