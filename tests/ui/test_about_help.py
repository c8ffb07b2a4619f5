"""About Captionist and Help, from the main window's Help button and the tray menu (offscreen)."""

from __future__ import annotations

from email.message import Message
from pathlib import Path

import pytest
from PySide6.QtCore import QUrl
from PySide6.QtGui import QIcon

from captionist import paths
from captionist._version import __version__
from captionist.models import ModelStore
from captionist.pipeline.controller import SessionController
from captionist.settings import Settings
from captionist.ui.about_dialog import AboutFacts, about_text
from captionist.ui.help_link import help_url, open_help, project_url
from captionist.ui.main_window import MainWindow
from captionist.ui.overlay import CaptionOverlay
from captionist.ui.tray import Tray
from tests.fakes.fake_engine import FakeModel
from tests.ui.conftest import wait_for_model


class FakeDevice:
    def __init__(self, label: str) -> None:
        self.label = label


class OpenedUrls(list):
    """Stands in for QDesktopServices.openUrl: records each URL, answers ``ok``."""

    ok = True

    def __call__(self, url: QUrl) -> bool:
        self.append(url)
        return self.ok


@pytest.fixture
def window(qtbot, fake_sd, tmp_path: Path) -> tuple[MainWindow, OpenedUrls, SessionController]:
    model_file = tmp_path / "models" / "voxtral-q4.gguf"
    model_file.parent.mkdir()
    model_file.write_bytes(b"GGUF" + bytes(100))
    controller = SessionController(sd=fake_sd, model_loader=lambda p, b: FakeModel())
    settings = Settings(transcript_dir=str(tmp_path / "transcripts"))
    overlay = CaptionOverlay(settings.overlay)
    qtbot.addWidget(overlay)
    opened = OpenedUrls()
    win = MainWindow(
        controller,
        settings,
        overlay=overlay,
        model_store=ModelStore(model_file.parent, demo=tmp_path / "none.gguf"),
        open_url=opened,
    )
    qtbot.addWidget(win)
    wait_for_model(qtbot, win)
    return win, opened, controller


def facts(**changes: str) -> AboutFacts:
    base = AboutFacts(
        version="1.2.3",
        model="none loaded",
        engine="ggml 0.20 (libggml-python)",
        licence="Apache-2.0",
        settings_file="/cfg/settings.json",
        transcripts_dir="/docs/Captionist",
        models_dir="/data/models",
    )
    return AboutFacts(**{**base.__dict__, **changes})


def test_about_names_the_version_model_engine_licence_and_folders(tmp_path: Path) -> None:
    settings = Settings(transcript_dir=str(tmp_path / "t"))
    gathered = AboutFacts.gather(
        settings,
        None,
        devices=lambda: [FakeDevice("CPU"), FakeDevice("Vulkan0 — llvmpipe")],
        distribution_version=lambda name: "0.20.2.post1",
        licence="Apache-2.0",
    )
    assert gathered.version == __version__
    assert gathered.model == "none loaded"
    assert gathered.engine == "ggml 0.20.2.post1 (libggml-python); devices: CPU, Vulkan0 — llvmpipe"
    assert (gathered.settings_file, gathered.transcripts_dir, gathered.models_dir) == (
        str(paths.settings_file()),
        str(tmp_path / "t"),
        str(paths.models_dir()),
    )
    assert about_text(facts()).splitlines() == [
        "Version: 1.2.3",
        "Model: none loaded",
        "Engine: ggml 0.20 (libggml-python)",
        "Licence: Apache-2.0",
        "Settings: /cfg/settings.json",
        "Transcripts: /docs/Captionist",
        "Models: /data/models",
    ]


def test_an_engine_that_cannot_list_devices_does_not_keep_about_shut() -> None:
    def broken() -> list:
        raise RuntimeError("no ggml backend")

    gathered = AboutFacts.gather(Settings(), None, devices=broken, distribution_version=lambda n: "0.20")
    assert gathered.engine == "ggml 0.20 (libggml-python); devices unavailable (no ggml backend)"


def test_the_window_and_the_tray_show_about_with_the_loaded_model(window, qtbot) -> None:
    win, opened, controller = window
    assert [a.text() for a in win.help_button.menu().actions()] == ["Help", "About Captionist"]
    win.help_button.about_action.trigger()
    assert win.help_button.about is not None and win.help_button.about.isVisible()
    text = win.help_button.about.text()
    assert f"Version: {__version__}" in text
    assert f"Model: {win.model_info.label} on fake-cpu" in text
    assert "Licence: Apache-2.0" in text and f"Models: {paths.models_dir()}" in text
    assert "&lt;" not in text and "Captionist" in win.help_button.about.body.text()
    win.help_button.about.close()
    tray = Tray(QIcon(), win, win.overlay, controller)
    assert [a.text() for a in tray.menu.actions() if a.text()][-3:] == ["Help", "About Captionist", "Quit"]
    tray.about.trigger()
    assert win.help_button.about.isVisible()  # the same dialog, shown again
    win.help_button.about.help_button.click()
    assert len(opened) == 1


def test_help_opens_the_url_through_the_injected_opener(window) -> None:
    win, opened, controller = window
    win.help_button.help_action.trigger()
    assert len(opened) == 1 and opened[0] == help_url()
    Tray(QIcon(), win, win.overlay, controller).help.trigger()
    assert len(opened) == 2
    opened.ok = False  # no browser
    assert win.open_help() is None
    assert "could not open the help" in win.statusBar().currentMessage()


def metadata_with(*urls: str, description: str = "") -> Message:
    message = Message()
    for url in urls:
        message["Project-URL"] = url
    if description:
        message.set_payload(description)
    return message


def test_the_project_page_wins_and_documentation_is_preferred() -> None:
    assert project_url(metadata_with()) is None
    assert project_url(metadata_with("Source, https://example.org/src")) == "https://example.org/src"
    both = metadata_with("Source, https://example.org/src", "Documentation, https://example.org/docs")
    assert project_url(both) == "https://example.org/docs"
    assert project_url(metadata_with("Tracker, javascript:alert(1)")) is None  # only web pages
    url = help_url(lambda: both, checkout_readme=Path("/nowhere/README.md"))
    assert url == QUrl("https://example.org/docs")


def test_without_a_project_page_the_readme_is_opened_locally(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# Captionist\n")
    assert help_url(lambda: metadata_with(), checkout_readme=readme) == QUrl.fromLocalFile(str(readme))
    installed = help_url(
        lambda: metadata_with(description="# Captionist\nHelp text\n"),
        checkout_readme=tmp_path / "x",
        bundled_readme=tmp_path / "y",
    )
    copy = paths.data_dir() / "help" / "README.md"
    assert installed == QUrl.fromLocalFile(str(copy)) and copy.read_text() == "# Captionist\nHelp text\n"
    assert help_url(lambda: None, checkout_readme=tmp_path / "x", bundled_readme=tmp_path / "y") is None
    bundled = tmp_path / "bundle" / "README.md"  # the installers carry a copy (packaging/captionist.spec)
    bundled.parent.mkdir()
    bundled.write_text("# Captionist\n")
    found = help_url(lambda: None, checkout_readme=tmp_path / "x", bundled_readme=bundled)
    assert found == QUrl.fromLocalFile(str(bundled))
    assert open_help(OpenedUrls(), url=None) is not None  # this checkout has a README


def test_open_help_reports_what_it_opened() -> None:
    opened = OpenedUrls()
    assert open_help(opened, QUrl("https://example.org")) == QUrl("https://example.org")
    opened.ok = False
    assert open_help(opened, QUrl("https://example.org")) is None
