"""The main window wired to a fake sound device and a fake model (``app_parts``), for tests/ui."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile
import soxr

from captionist.audio.devices import list_sources
from captionist.models import ModelStore
from captionist.pipeline.controller import SessionController
from captionist.settings import Settings
from captionist.ui.app import AppParts, build_app
from captionist.ui.main_window import MainWindow
from captionist.ui.overlay import CaptionOverlay
from tests.fakes.fake_engine import FakeModel, expected_words
from tests.fakes.fake_hotkeys import FakeHotkeyFactory
from tests.fakes.fake_portal import FakePortal, PrivateBus
from tests.fakes.fake_sounddevice import FakeSoundDevice


@pytest.fixture
def bus() -> Iterator[PrivateBus]:
    """A D-Bus session bus of the test's own (a dbus-daemon), for the desktop portal's tests."""
    if not PrivateBus.available():
        pytest.skip("needs dbus-daemon (tools/setup_system.sh)")
    with PrivateBus() as bus:
        yield bus


@pytest.fixture
def portal(bus: PrivateBus) -> Iterator[FakePortal]:
    """A desktop portal with GlobalShortcuts on ``bus`` (tests/fakes/fake_portal.py)."""
    with FakePortal(bus.address) as portal:
        yield portal


def wait_for_model(qtbot, win: MainWindow) -> None:
    """The window loads the chosen model in the background; wait until it offers its choices."""
    qtbot.waitUntil(lambda: win.model_info is not None and win.model_info.path == win.selected_model())


@pytest.fixture
def built_apps(qtbot) -> Iterator[Callable[..., AppParts]]:
    """``make(**build_app_kwargs)``: the whole app as ``captionist`` builds it, with a fake model and
    fake global shortcuts unless given; taken down after the test (its quit handler too)."""
    built: list[AppParts] = []

    def make(**kwargs: Any) -> AppParts:
        kwargs.setdefault("model_loader", lambda path, backend: FakeModel())
        kwargs.setdefault("shortcut_listener", FakeHotkeyFactory())
        parts = build_app(**kwargs)
        qtbot.addWidget(parts.window)
        qtbot.addWidget(parts.overlay)
        built.append(parts)
        return parts

    yield make
    for parts in built:
        parts.app.aboutToQuit.disconnect(parts.at_exit)
        parts.save_timer.stop()


@pytest.fixture
def app_parts(qtbot, fake_sd: FakeSoundDevice, wav_48k: Path, tmp_path: Path):
    """(window, controller, model, fake_sd, expected words): "USB Mic" replays ``wav_48k``."""
    audio, rate = soundfile.read(wav_48k, dtype="float32")
    fake_sd.add_device("USB Mic", rate=rate, channels=2, audio=audio, default=True)
    model_file = tmp_path / "models" / "voxtral-q4.gguf"
    model_file.parent.mkdir()
    model_file.write_bytes(b"GGUF" + bytes(100))
    model = FakeModel()
    controller = SessionController(sd=fake_sd, model_loader=lambda p, b: model)
    settings = Settings(transcript_dir=str(tmp_path / "transcripts"))
    overlay = CaptionOverlay(settings.overlay)  # as the app wires it: one OverlaySettings
    qtbot.addWidget(overlay)
    win = MainWindow(
        controller,
        settings,
        overlay=overlay,
        list_sources=lambda: list_sources(fake_sd, pactl=None),
        model_store=ModelStore(model_file.parent, demo=tmp_path / "none.gguf"),
    )
    qtbot.addWidget(win)
    wait_for_model(qtbot, win)
    want = expected_words(soxr.resample(audio[:, 0], rate, 16000).astype(np.float32))
    return win, controller, model, fake_sd, want
