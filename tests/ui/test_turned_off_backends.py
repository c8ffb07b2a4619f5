"""Preferences' lines for GPU backends that crashed Captionist, and their "turn back on" buttons."""

from __future__ import annotations

import json
from pathlib import Path

from PySide6.QtCore import Qt

from captionist.backend_guard import BackendGuard
from captionist.ui.turned_off_backends import TurnedOffBackends


def _record(folder: Path, *crashes: tuple[str, str]) -> BackendGuard:
    folder.mkdir(parents=True, exist_ok=True)
    entries = [{"backend": b, "stage": s, "when": "2026-12-06T05:30:00"} for b, s in crashes]
    (folder / "crashed.json").write_text(json.dumps({"crashes": entries}))
    return BackendGuard(folder)


def test_nothing_off_shows_nothing(qtbot, tmp_path: Path) -> None:
    rows = TurnedOffBackends(BackendGuard(tmp_path))
    qtbot.addWidget(rows)
    assert rows.isHidden() and rows.buttons == {}


def test_each_backend_that_crashed_has_a_line_and_a_way_back(qtbot, tmp_path: Path) -> None:
    guard = _record(tmp_path, ("vulkan", "start_driver"), ("cuda", "open_model"))
    rows = TurnedOffBackends(guard)
    qtbot.addWidget(rows)
    rows.show()
    expected = "Vulkan is off: it crashed Captionist 06 Dec 2026, 05:30 when its driver started."
    assert rows.labels["vulkan"].text() == expected
    assert rows.labels["cuda"].text().endswith("when a model ran on it.")
    qtbot.mouseClick(rows.buttons["vulkan"], Qt.MouseButton.LeftButton)
    assert set(guard.disabled()) == {"cuda"}
    assert rows.labels["vulkan"].text() == "Vulkan is on again from the next start of Captionist."
    assert not rows.buttons["vulkan"].isEnabled() and rows.buttons["cuda"].isEnabled()


def test_a_record_that_cannot_be_rewritten_says_so(qtbot, tmp_path: Path) -> None:
    guard = _record(tmp_path / "guard", ("vulkan", "start_driver"))
    rows = TurnedOffBackends(guard)
    qtbot.addWidget(rows)
    (tmp_path / "guard" / "crashed.json.tmp").mkdir()  # where the new record would be written
    assert not rows.turn_on("vulkan")
    assert rows.labels["vulkan"].text().startswith("Vulkan could not be turned back on:")
    assert rows.buttons["vulkan"].isEnabled()
    assert set(guard.disabled()) == {"vulkan"}
