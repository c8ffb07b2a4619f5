"""The desktop app with a sound server that does not answer: at start (``audio.sound_system``) the
window comes up and says why, and the sources appear, with no action, once the server answers; later
(``audio.bounded_call``) Start says why, and once the server answers that line goes and the level
meters open again by themselves."""

from __future__ import annotations

import pytest

from captionist.audio import capture as capture_module
from captionist.audio.sound_system import SoundSystem
from captionist.ui import app as app_module
from captionist.ui.app import AppParts
from captionist.ui.banner import Problem
from tests.fakes.stuck_import import StuckImport, wait_until_answered
from tests.ui.conftest import wait_for_model


@pytest.fixture
def start_app(built_apps, monkeypatch):
    monkeypatch.setattr(app_module, "START_WAIT_S", 0.05)

    def start(stuck: StuckImport) -> AppParts:
        system = SoundSystem(stuck)
        monkeypatch.setattr(app_module, "shared_sound_system", lambda: system)
        return built_apps()  # no sd given: the app starts the sound system itself

    return start


def test_the_app_starts_while_the_sound_server_hangs_and_lists_the_sources_once_it_answers(
    start_app, fake_sd, qtbot
) -> None:
    fake_sd.add_device("USB Mic", rate=48000, default=True)
    stuck = StuckImport(module=fake_sd)
    try:
        parts = start_app(stuck)
        window = parts.window
        assert Problem.AUDIO in window.error_banner.problems()
        assert "the sound system is not answering" in window.error_banner.text()
        assert window.sources.list.count() == 0
        assert not window.start_session()  # nothing to capture yet, and it says so
    finally:
        stuck.release.set()
    qtbot.waitUntil(lambda: window.sources.list.count() == 1, timeout=5000)
    assert [s.name for s in window.sources.selected()] == ["USB Mic"]  # the default input, ticked
    assert Problem.AUDIO not in window.error_banner.problems()
    qtbot.waitUntil(lambda: window.model_info is not None, timeout=5000)
    assert window.start_session()  # the late module is the one the session captures from
    qtbot.waitUntil(lambda: bool(fake_sd.streams), timeout=5000)
    window.controller.stop()
    assert window.controller.wait_idle(10000)


def test_a_start_that_fails_after_the_app_is_up_shows_its_own_error(start_app, qtbot) -> None:
    stuck = StuckImport(error=OSError("PortAudio library not found"))
    try:
        parts = start_app(stuck)
        assert "not answering" in parts.window.error_banner.text()
    finally:
        stuck.release.set()
    banner = parts.window.error_banner
    qtbot.waitUntil(lambda: "PortAudio library not found" in banner.text(), timeout=5000)
    assert "not answering" not in banner.text() and Problem.AUDIO in banner.problems()


def test_once_a_server_that_hung_in_use_answers_start_s_error_goes_and_the_meters_reopen(
    built_apps, fake_sd, qtbot, monkeypatch
) -> None:
    monkeypatch.setattr(capture_module, "OPEN_WAIT_S", 0.2)
    monkeypatch.setattr(capture_module, "CLOSE_WAIT_S", 0.2)
    fake_sd.add_device("Mic", rate=16000, default=True)
    window = built_apps(sd=fake_sd).window
    window.show()
    qtbot.waitUntil(lambda: window.meters.preview.active, timeout=5000)
    wait_for_model(qtbot, window)
    preview_stream = fake_sd.streams[-1]
    fake_sd.hang()
    try:
        assert not window.start_session()  # the meters' stream could not be closed for it in time
        banner = window.error_banner
        assert banner.problems() == [Problem.SOUND_SERVER], banner.text()
        assert "cannot open 'Mic': the sound system is not answering" in banner.text()
        assert not window.meters.preview.active  # and they could not open again
    finally:
        fake_sd.answer()
    wait_until_answered()
    qtbot.waitUntil(lambda: window.meters.preview.active, timeout=5000)  # nothing pressed
    assert Problem.SOUND_SERVER not in banner.problems() and not banner.isVisible()
    assert preview_stream.closed and not fake_sd.streams[-1].closed
    assert window.start_session()
    window.controller.stop()
    assert window.controller.wait_idle(10000)


def test_other_start_errors_stay_when_the_server_answers(built_apps, fake_sd, qtbot) -> None:
    fake_sd.add_device("Mic", rate=16000, default=True)
    window = built_apps(sd=fake_sd).window
    window.controller.error.emit("cannot open 'Mic': Invalid sample rate")
    window.sound_system_answers()
    assert window.error_banner.problems() == [Problem.SESSION]


def test_refresh_while_the_server_hangs_says_so_at_once_and_the_list_comes_back(
    built_apps, fake_sd, qtbot, monkeypatch
) -> None:
    # listing the PulseAudio sources asks the server (pactl), which would hold the window for 3 s a
    # call; while a call is known to be stuck the list says why instead, until the server answers
    monkeypatch.setattr(capture_module, "CLOSE_WAIT_S", 0.2)
    fake_sd.add_device("Mic", rate=16000, default=True)
    window = built_apps(sd=fake_sd).window
    window.show()
    qtbot.waitUntil(lambda: window.meters.preview.active, timeout=5000)
    fake_sd.hang()
    try:
        window.hide()  # the meters close their stream: that call is left waiting
        window.show()
        window.refresh_sources()  # Refresh sources
        banner = window.error_banner
        assert Problem.AUDIO in banner.problems() and "the sound system is not answering" in banner.text()
        assert window.sources.list.count() == 0
    finally:
        fake_sd.answer()
    wait_until_answered()
    qtbot.waitUntil(lambda: window.sources.list.count() == 1, timeout=5000)
    assert Problem.AUDIO not in banner.problems()
    qtbot.waitUntil(lambda: window.meters.preview.active, timeout=5000)
