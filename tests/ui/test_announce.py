"""Announcements made before the screen reader is connected wait for it, briefly."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QWidget

from captionist.ui import announce as announce_module
from captionist.ui.announce import Urgency, _Queue


@pytest.fixture
def sent(monkeypatch) -> list[tuple[QWidget, str, Urgency]]:
    out: list[tuple[QWidget, str, Urgency]] = []
    monkeypatch.setattr(
        announce_module, "_send", lambda widget, message, urgency: out.append((widget, message, urgency))
    )
    return out


def test_said_at_once_while_a_screen_reader_listens(qtbot, sent) -> None:
    widget = QWidget()
    qtbot.addWidget(widget)
    queue = _Queue(listening=lambda: True)
    queue.say(widget, "cannot open 'USB Mic'", Urgency.INTERRUPT)
    assert sent == [(widget, "cannot open 'USB Mic'", Urgency.INTERRUPT)]
    assert queue.timer is None


def test_said_before_the_screen_reader_connects_it_waits_for_it(qtbot, sent) -> None:
    widget = QWidget()
    qtbot.addWidget(widget)
    listening = [False]
    queue = _Queue(listening=lambda: listening[0])
    queue.say(widget, "settings file was corrupt", Urgency.INTERRUPT)
    queue.say(widget, "a session was recovered", Urgency.POLITE)
    queue.poll()
    assert sent == [] and queue.timer is not None and queue.timer.isActive()
    listening[0] = True
    qtbot.waitUntil(lambda: len(sent) == 2)
    assert [(m, u) for _, m, u in sent] == [
        ("settings file was corrupt", Urgency.INTERRUPT),
        ("a session was recovered", Urgency.POLITE),
    ]
    assert not queue.timer.isActive() and queue.waiting == []
    queue.poll()
    assert len(sent) == 2  # said once


def test_with_no_screen_reader_it_is_dropped_after_a_while(qtbot, sent, monkeypatch) -> None:
    widget = QWidget()
    qtbot.addWidget(widget)
    queue = _Queue(listening=lambda: False)
    queue.say(widget, "nobody hears this", Urgency.POLITE)
    queue.poll()
    assert queue.waiting  # still waiting
    monkeypatch.setattr(announce_module, "WAIT_FOR_READER_S", 0.0)
    queue.poll()
    assert queue.waiting == [] and not queue.timer.isActive() and sent == []


def test_a_message_about_a_closed_window_is_not_said(qtbot, sent) -> None:
    widget = QWidget()
    listening = [False]
    queue = _Queue(listening=lambda: listening[0])
    queue.say(widget, "gone", Urgency.POLITE)
    widget.deleteLater()
    qtbot.waitUntil(lambda: not announce_module.shiboken6.isValid(widget))
    listening[0] = True
    queue.poll()
    assert sent == [] and queue.waiting == []


def test_an_empty_message_is_not_said(qtbot, sent) -> None:
    widget = QWidget()
    qtbot.addWidget(widget)
    announce_module.announce(widget, "", Urgency.POLITE)
    assert sent == []
