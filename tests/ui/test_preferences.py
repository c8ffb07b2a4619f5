from __future__ import annotations

import pytest

from captionist import paths
from captionist.settings import Settings
from captionist.ui.overlay import CaptionOverlay
from captionist.ui.preferences import Preferences


@pytest.fixture
def prefs(qtbot):
    settings = Settings()
    overlay = CaptionOverlay(settings.overlay)
    prefs = Preferences(settings, overlay)
    qtbot.addWidget(overlay)
    qtbot.addWidget(prefs)
    return prefs


def test_overlay_controls_apply_live(prefs: Preferences, qtbot) -> None:
    before = prefs.overlay.height()
    with qtbot.waitSignal(prefs.settings_changed):
        prefs.lines.setValue(5)
    assert prefs.settings.overlay.lines == 5 and prefs.overlay.height() > before
    prefs.opacity.setValue(25)
    assert prefs.settings.overlay.background_opacity == 0.25
    prefs.shadow.setChecked(True)
    assert prefs.settings.overlay.shadow
    prefs.set_colour("newest_color", "#123456")
    assert prefs.settings.overlay.newest_color == "#123456"
    with pytest.raises(ValueError, match="not a colour"):
        prefs.set_colour("text_color", "nope")
    prefs.click_through.setChecked(True)
    assert prefs.overlay.is_click_through()


def test_transcript_controls(prefs: Preferences, tmp_path) -> None:
    prefs.format.setCurrentText("vtt")
    prefs.timestamps.setChecked(False)
    prefs.set_folder(tmp_path)
    s = prefs.settings
    assert (s.transcript_format, s.transcript_timestamps, s.transcript_folder()) == ("vtt", False, tmp_path)
    assert prefs.folder.text() == str(tmp_path) and prefs.default_folder.isEnabled()
    prefs.default_folder.click()  # back from a drive that is gone, without hunting for the folder
    assert s.transcript_dir == "" and s.transcript_folder() == paths.default_transcript_dir()
    assert prefs.folder.text() == str(paths.default_transcript_dir()) and not prefs.default_folder.isEnabled()


def fake_devices() -> list:
    from captionist.engine import ComputeDevice, DeviceType

    cpu = ComputeDevice("CPU", "CPU", "AMD EPYC", DeviceType.CPU, 0, 0, "AVX2 AVX512", False)
    gpu = ComputeDevice(
        "Vulkan", "Vulkan0", "llvmpipe", DeviceType.INTEGRATED_GPU, 8 << 30, 4 << 30, "", True
    )
    return [cpu, gpu]


def test_compute_device_picker_lists_devices_and_saves_the_choice(qtbot) -> None:
    settings = Settings()
    overlay = CaptionOverlay(settings.overlay)
    prefs = Preferences(settings, overlay, devices=fake_devices)
    qtbot.addWidget(overlay)
    qtbot.addWidget(prefs)
    labels = [prefs.device.itemText(i) for i in range(prefs.device.count())]
    assert labels == ["Automatic (Vulkan0 — llvmpipe)", "CPU — AMD EPYC", "Vulkan0 — llvmpipe"]
    assert prefs.device.currentData() == "auto"
    with qtbot.waitSignal(prefs.backend_changed) as changed:
        prefs.device.setCurrentIndex(1)
    assert changed.args == ["cpu"]
    assert settings.backend == "cpu"


def test_a_saved_device_this_computer_lacks_stays_visible(qtbot) -> None:
    settings = Settings()
    settings.backend = "cuda0"
    overlay = CaptionOverlay(settings.overlay)
    prefs = Preferences(settings, overlay, devices=fake_devices)
    qtbot.addWidget(overlay)
    qtbot.addWidget(prefs)
    assert prefs.device.currentText() == "cuda0 (not available on this computer)"
    assert prefs.device.currentData() == "cuda0"


def test_preferences_open_when_the_engine_cannot_list_devices(qtbot) -> None:
    def broken() -> list:
        raise RuntimeError("no engine")

    settings = Settings()
    overlay = CaptionOverlay(settings.overlay)
    prefs = Preferences(settings, overlay, devices=broken)
    qtbot.addWidget(overlay)
    qtbot.addWidget(prefs)
    assert [prefs.device.itemData(i) for i in range(prefs.device.count())] == ["auto"]
