"""Screen readers: every control a keyboard reaches has a name of its own.

A control is named the way a screen reader finds it (Qt's accessibility interface, as AT-SPI, UI
Automation and NSAccessibility read it): its own text, its accessible name, or a label that names it
(a ``QLabel`` whose buddy it is). A combo box's name is its current value on Linux, so a combo box
needs such a label. Two controls of one kind with the same name in one window cannot be told apart
("Clear", "Clear", "Clear"), so names are unique per window.
"""

from __future__ import annotations

from collections import Counter

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QAccessible
from PySide6.QtWidgets import QApplication, QTabWidget, QWidget

from captionist.models.languages import LanguageChoice
from captionist.ui.app import AppParts, build_app
from captionist.ui.language_picker import LanguagePicker
from tests.fakes.fake_engine import FakeModel
from tests.fakes.fake_hotkeys import FakeHotkeyFactory

NAMED_BY_LABEL = {QAccessible.Role.ComboBox}  # their name is their value (on Linux)


def _reached_by_keyboard(w: QWidget, top: QWidget) -> bool:
    return w.isVisibleTo(top) and w.focusProxy() is None and bool(w.focusPolicy() & Qt.FocusPolicy.TabFocus)


def _name(w: QWidget) -> str:
    iface = QAccessible.queryAccessibleInterface(w)
    labels = [  # a group box's title is a label too, but names no control of it in particular
        other.text(QAccessible.Text.Name)
        for other, _ in iface.relations(QAccessible.Relation.Label)
        if other.role() != QAccessible.Role.Grouping
    ]
    if iface.role() in NAMED_BY_LABEL:
        return labels[0] if labels else ""
    return iface.text(QAccessible.Text.Name).strip()


def _controls(top: QWidget) -> list[tuple[str, str, QWidget]]:
    """(kind, name, widget) of each control the keyboard reaches in ``top``, in every tab."""
    tabs = [t for t in top.findChildren(QTabWidget) if t.isVisibleTo(top)]
    pages = [(t, i) for t in tabs for i in range(t.count())] or [(None, 0)]
    seen: dict[int, tuple[str, str, QWidget]] = {}
    for tab, i in pages:
        if tab is not None:
            tab.setCurrentIndex(i)
        for w in top.findChildren(QWidget):
            if id(w) not in seen and _reached_by_keyboard(w, top):
                role = QAccessible.queryAccessibleInterface(w).role()
                seen[id(w)] = (role.name, _name(w), w)
    return list(seen.values())


def _problems(top: QWidget) -> list[str]:
    controls = _controls(top)
    assert len(controls) >= 5, "the walk found the window's controls"
    problems = [f"{kind} {type(w).__name__} has no name" for kind, name, w in controls if not name]
    twice = Counter((kind, name) for kind, name, _ in controls if name)
    problems += [f"{n} {kind}s named {name!r}" for (kind, name), n in twice.items() if n > 1]
    return problems


@pytest.fixture
def app(qtbot, fake_sd):
    fake_sd.add_device("Mic", rate=16000, default=True)
    p: AppParts = build_app(
        sd=fake_sd, model_loader=lambda path, backend: FakeModel(), shortcut_listener=FakeHotkeyFactory()
    )
    qtbot.addWidget(p.window)
    qtbot.addWidget(p.overlay)
    p.window.show()
    yield p
    p.app.aboutToQuit.disconnect(p.at_exit)
    p.save_timer.stop()


def test_main_window_controls_have_names(app: AppParts) -> None:
    app.window.show_error("cannot open 'USB Mic'")  # both message strips, with their close buttons
    app.window.show_notice("a session was recovered")
    problems = _problems(app.window)
    assert problems == [], "\n".join(problems)


def test_preferences_controls_have_names_in_every_tab(app: AppParts) -> None:
    prefs = app.window.open_preferences()
    assert prefs is not None
    problems = _problems(prefs)
    assert problems == [], "\n".join(problems)


def test_progress_and_level_bars_say_what_they_measure(app: AppParts) -> None:
    models = app.window.open_models()
    assert _name(models.progress) == "Download progress"
    meters = list(app.window.sources.meters.values())
    assert meters and [_name(m) for m in meters] == ["Level of Mic"]


def test_the_colour_buttons_say_which_colour_and_what_it_is_now(app: AppParts) -> None:
    prefs = app.window.open_preferences()
    button = prefs.colour_buttons["text_color"]
    iface = QAccessible.queryAccessibleInterface(button)
    assert iface.text(QAccessible.Text.Name) == "Text colour"
    assert iface.text(QAccessible.Text.Description) == f"now {app.settings.overlay.text_color}"


def test_models_dialog_controls_have_names(app: AppParts) -> None:
    problems = _problems(app.window.open_models())
    assert problems == [], "\n".join(problems)


def test_the_language_picker_is_named_by_its_label(qtbot) -> None:
    picker = LanguagePicker()
    qtbot.addWidget(picker)
    picker.set_choices(
        [LanguageChoice("auto", "Auto", ("auto",)), LanguageChoice("en", "English", ("en",))], "en"
    )
    assert _name(picker.combo) == "Language"


def test_the_latency_slider_says_its_value_in_milliseconds(app: AppParts, qtbot) -> None:
    """The slider's own value is a position (0, 1, 2…); what it means is the label beside it."""
    control = app.window.latency
    qtbot.waitUntil(lambda: len(control.choices()) > 1)
    control.slider.setValue(control.slider.value() + 1 if control.slider.value() == 0 else 0)
    iface = QAccessible.queryAccessibleInterface(control.slider)
    assert iface.text(QAccessible.Text.Description).startswith(
        f"{control.value_ms()} ms. Lower: captions sooner"
    )


def test_a_keyboard_alone_ticks_a_source_and_starts_and_stops_captions(app_parts, qtbot) -> None:
    """Tab from the sources to Start, Space to tick and to press: no mouse."""
    win, controller, _, fake_sd, want = app_parts
    with qtbot.waitActive(win):
        win.show()
        win.activateWindow()
    sources = win.sources.list
    sources.setFocus()
    sources.setCurrentRow(0)
    qtbot.keyClick(sources, Qt.Key.Key_Space)
    assert win.sources.selected() == []  # unticked
    qtbot.keyClick(sources, Qt.Key.Key_Space)
    assert [s.name for s in win.sources.selected()] == ["USB Mic"]
    for _ in range(20):  # Tab along the focus chain to Start
        if win.start_button.hasFocus():
            break
        qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Tab)
    assert win.start_button.hasFocus()
    with qtbot.waitSignal(controller.state_changed):
        qtbot.keyClick(win.start_button, Qt.Key.Key_Space)
    assert win.start_button.text() == "Stop" and win.start_button.hasFocus()
    assert fake_sd.streams[-1].done.wait(5)
    with qtbot.waitSignal(controller.session_finished, timeout=10000):
        qtbot.keyClick(win.start_button, Qt.Key.Key_Space)
    body = [line for line in win.transcript.plain_text().splitlines() if not line.startswith("—")]
    assert " ".join(body).split() == want
