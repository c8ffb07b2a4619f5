"""Models window: Delete only for models in the models folder; a failed download says so and
leaves no progress bar behind; the quantization list shows the sizes README's table shows."""

from __future__ import annotations

import pytest

from captionist.models import CATALOGUE, ModelStore
from captionist.models.download import NoNetwork
from captionist.models.recommend import Hardware
from captionist.models.size_table import format_gb
from captionist.ui.models_dialog import ModelsDialog

LAPTOP = Hardware(physical_cores=4, ram_gb=16.0, has_gpu=False, gpu="CPU")


def _dialog(qtbot, tmp_path, **kwargs) -> ModelsDialog:
    demo = tmp_path / "demo.gguf"
    demo.write_bytes(b"GGUF" + bytes(16))
    dialog = ModelsDialog(ModelStore(tmp_path / "models", demo=demo), hardware=LAPTOP, **kwargs)
    qtbot.addWidget(dialog)
    return dialog


def test_delete_is_not_offered_for_the_built_in_model(qtbot, tmp_path) -> None:
    dialog = _dialog(qtbot, tmp_path)
    local = tmp_path / "mine.gguf"
    local.write_bytes(b"GGUF")
    assert dialog.import_file(local)
    rows = {dialog.installed.item(i).text(): i for i in range(dialog.installed.count())}
    (built_in,) = [row for text, row in rows.items() if text.endswith("built in")]
    assert not dialog.delete_button.isEnabled()  # nothing chosen yet
    dialog.installed.setCurrentRow(built_in)
    assert not dialog.delete_button.isEnabled()
    dialog.installed.setCurrentRow(1 - built_in)
    assert dialog.delete_button.isEnabled()
    dialog.delete_selected()
    assert dialog.installed.count() == 1 and not dialog.delete_button.isEnabled()
    assert (tmp_path / "demo.gguf").exists()


def test_a_failed_download_shows_the_failure_and_resets(qtbot, tmp_path) -> None:
    def fails_halfway(entry, quant, *, cancel, models_dir, on_progress):
        on_progress("download", 0, 10_000_000)
        raise NoNetwork("connection reset by huggingface.co")

    dialog = _dialog(qtbot, tmp_path, installer=fails_halfway)
    assert dialog.progress.isHidden()
    dialog.start_install()
    assert not dialog.progress.isHidden()
    qtbot.waitUntil(lambda: dialog.download.isEnabled(), timeout=5000)
    assert dialog.progress.isHidden() and dialog.progress.value() == 0
    assert dialog.status.text() == (
        "Download failed: connection reset by huggingface.co Press Download to try again."
    )
    assert dialog.catalogue.isEnabled() and not dialog.cancel_button.isEnabled()


@pytest.mark.parametrize("entry", CATALOGUE, ids=lambda e: e.key)
def test_each_quantization_item_shows_its_size_and_ram(qtbot, tmp_path, entry) -> None:
    dialog = _dialog(qtbot, tmp_path)
    dialog.choose(entry.key)
    items = [dialog.quant.itemText(i) for i in range(dialog.quant.count())]
    assert [dialog.quant.itemData(i) for i in range(dialog.quant.count())] == list(entry.quantization_types)
    for text, q in zip(items, entry.quantizations, strict=True):
        sizes = f"{format_gb(q.file_gb)} file, needs ~{format_gb(q.ram_gb)} RAM"
        assert text.startswith(f"{q.type_name}: {sizes}")


def test_a_screen_reader_hears_each_stage_once_and_the_outcome(qtbot, tmp_path, monkeypatch) -> None:
    from captionist.ui import models_dialog
    from captionist.ui.announce import Urgency

    said: list[tuple[str, Urgency]] = []
    monkeypatch.setattr(models_dialog, "announce", lambda widget, text, urgency: said.append((text, urgency)))

    def installs(entry, quant, *, cancel, models_dir, on_progress):
        for done in (0, 4_000_000, 8_000_000, 10_000_000):
            on_progress("download", done, 10_000_000)
        on_progress("convert", 0, 1)
        models_dir.mkdir(parents=True, exist_ok=True)
        path = models_dir / "new.gguf"
        path.write_bytes(b"GGUF" + bytes(16))
        return path

    dialog = _dialog(qtbot, tmp_path, installer=installs)
    dialog.start_install()
    qtbot.waitUntil(lambda: dialog.download.isEnabled(), timeout=5000)
    assert said == [
        ("Connecting to huggingface.co…", Urgency.POLITE),
        ("Downloading… 0.00 / 0.01 GB", Urgency.POLITE),  # the later figures are only shown
        ("Converting to GGUF…", Urgency.POLITE),
        ("Installed new.gguf", Urgency.POLITE),
    ]
    said.clear()

    def fails(entry, quant, *, cancel, models_dir, on_progress):
        raise NoNetwork("connection reset by huggingface.co")

    dialog.installer = fails
    dialog.start_install()
    qtbot.waitUntil(lambda: dialog.download.isEnabled(), timeout=5000)
    assert said[-1] == (
        "Download failed: connection reset by huggingface.co Press Download to try again.",
        Urgency.INTERRUPT,
    )
