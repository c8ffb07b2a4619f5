"""Preferences' "Start Captionist when I log in": shows what is on disk, writes it, explains failures."""

from __future__ import annotations

from pathlib import Path

import pytest

from captionist.autostart import LoginItemState
from captionist.autostart.windows_run_key import RunKeyEntry
from captionist.autostart.xdg_autostart import FILE_NAME, XdgAutostart
from captionist.settings import Settings
from captionist.ui.overlay import CaptionOverlay
from captionist.ui.preferences import Preferences
from captionist.ui.startup_box import StartupBox
from tests.fakes.fake_registry import FakeRunKey

COMMAND = ["/opt/Caption Tools/bin/python3", "-m", "captionist"]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return tmp_path / "autostart"


def make_box(qtbot, settings: Settings, item) -> StartupBox:
    box = StartupBox(settings, item, command=lambda: COMMAND)
    qtbot.addWidget(box)
    return box


def test_off_by_default_and_ticking_writes_the_entry(qtbot, folder: Path) -> None:
    settings = Settings()
    assert settings.start_at_login is False
    box = make_box(qtbot, settings, XdgAutostart(folder))
    assert not box.start_at_login.isChecked() and box.message_text() == ""
    with qtbot.waitSignal(box.settings_changed):
        box.start_at_login.setChecked(True)
    assert settings.start_at_login is True
    assert 'Exec="/opt/Caption Tools/bin/python3" -m captionist' in (folder / FILE_NAME).read_text()
    box.start_at_login.setChecked(False)
    assert settings.start_at_login is False and not (folder / FILE_NAME).exists()


def test_the_box_shows_the_real_state_not_the_setting(qtbot, folder: Path) -> None:
    item = XdgAutostart(folder)
    item.enable(COMMAND)
    assert make_box(qtbot, Settings(start_at_login=False), item).start_at_login.isChecked()
    item.disable()  # removed by hand: the setting says on, the box says off
    assert not make_box(qtbot, Settings(start_at_login=True), item).start_at_login.isChecked()


def test_a_foreign_entry_is_explained_and_left_alone(qtbot, folder: Path) -> None:
    folder.mkdir()
    (folder / FILE_NAME).write_text("[Desktop Entry]\nExec=other-app\n")
    settings = Settings()
    box = make_box(qtbot, settings, XdgAutostart(folder))
    assert not box.start_at_login.isChecked()
    assert "was not written by Captionist" in box.message_text()
    assert box.set_start_at_login(True) is False
    assert not box.start_at_login.isChecked()  # back to the real state
    assert box.message_text().startswith("Could not turn on start at login: ")
    assert str(folder / FILE_NAME) in box.message_text()
    assert settings.start_at_login is True  # the user's choice is still recorded
    assert (folder / FILE_NAME).read_text() == "[Desktop Entry]\nExec=other-app\n"


def test_an_unwritable_place_shows_an_error_instead_of_crashing(qtbot, tmp_path: Path) -> None:
    (tmp_path / "autostart").write_text("a file where the folder goes")
    box = make_box(qtbot, Settings(), XdgAutostart(tmp_path / "autostart"))
    box.start_at_login.setChecked(True)  # through the signal, as a click does
    assert not box.start_at_login.isChecked()
    assert "could not write" in box.message_text() and box.message.isVisibleTo(box)


def test_a_registry_that_refuses_is_reported(qtbot) -> None:
    key = FakeRunKey()
    box = make_box(qtbot, Settings(), RunKeyEntry(key))
    key.fail_with = PermissionError(13, "Access is denied")
    assert box.refresh() is LoginItemState.UNREADABLE
    assert box.message_text().startswith("could not read HKEY_CURRENT_USER")
    assert box.set_start_at_login(True) is False
    assert box.message_text().startswith("Could not turn on start at login: could not read")
    assert not box.start_at_login.isChecked()
    key.fail_with = None
    assert box.set_start_at_login(True) is True
    assert box.message_text() == "" and box.refresh() is LoginItemState.ON


def test_preferences_offers_the_box_only_with_a_login_item(qtbot, folder: Path) -> None:
    settings = Settings()
    overlay = CaptionOverlay(settings.overlay)
    qtbot.addWidget(overlay)
    without = Preferences(settings, overlay)
    qtbot.addWidget(without)
    assert without.startup_box is None
    prefs = Preferences(settings, overlay, login_item=XdgAutostart(folder))
    qtbot.addWidget(prefs)
    assert prefs.startup_box is not None
    with qtbot.waitSignal(prefs.settings_changed):
        prefs.startup_box.start_at_login.setChecked(True)
    assert (folder / FILE_NAME).is_file()


def test_preferences_reads_the_entry_again_each_time_it_opens(qtbot, folder: Path) -> None:
    settings = Settings()
    overlay = CaptionOverlay(settings.overlay)
    qtbot.addWidget(overlay)
    item = XdgAutostart(folder)
    prefs = Preferences(settings, overlay, login_item=item)
    qtbot.addWidget(prefs)
    assert prefs.startup_box is not None and not prefs.startup_box.start_at_login.isChecked()
    item.enable(COMMAND)  # changed outside Captionist while Preferences was closed
    prefs.show()
    assert prefs.startup_box.start_at_login.isChecked()
