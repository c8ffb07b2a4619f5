from __future__ import annotations

import threading
from pathlib import Path

from captionist.models import VOXTRAL_REALTIME, ModelStore
from captionist.models.download import DownloadCancelled, NoNetwork
from captionist.ui.models_dialog import ModelsDialog


def test_install_shows_progress_and_lists_new_model(qtbot, tmp_path) -> None:
    def installer(entry, quant, *, cancel, models_dir, on_progress):
        on_progress("download", 5_000_000, 10_000_000)
        on_progress("download", 10_000_000, 10_000_000)
        on_progress("convert", 0, 1)
        on_progress("convert", 1, 1)
        on_progress("quantize", 1, 2)
        models_dir.mkdir(parents=True, exist_ok=True)
        path = models_dir / entry.file_name(quant)
        path.write_bytes(b"GGUF")
        on_progress("done", 1, 1)
        return path

    store = ModelStore(tmp_path / "models", demo=tmp_path / "none.gguf")
    dialog = ModelsDialog(store, installer=installer)
    qtbot.addWidget(dialog)
    assert dialog.quant.currentData() == VOXTRAL_REALTIME.default_quantization
    assert "needs ~3.6 GB RAM" in dialog.quant.currentText()
    with qtbot.waitSignal(dialog.models_changed, timeout=5000):
        dialog.start_install()
    assert dialog.status.text() == "Installed voxtral-mini-4b-realtime-q4_k_m.gguf"
    assert dialog.installed.count() == 1 and dialog.download.isEnabled()


def test_no_network_message_and_cancel(qtbot, tmp_path) -> None:
    def offline(entry, quant, **_):
        raise NoNetwork(
            "cannot reach huggingface.co (offline); check the network, or import a local GGUF file instead"
        )

    store = ModelStore(tmp_path / "models", demo=tmp_path / "none.gguf")
    dialog = ModelsDialog(store, installer=offline)
    qtbot.addWidget(dialog)
    dialog.start_install()
    qtbot.waitUntil(lambda: dialog.download.isEnabled(), timeout=5000)
    assert dialog.status.text().startswith("cannot reach huggingface.co")

    started = threading.Event()

    def slow(entry, quant, *, cancel, models_dir, on_progress):
        started.set()
        if not cancel.wait(5):
            return None
        raise DownloadCancelled("download cancelled")

    dialog.installer = slow
    dialog.start_install()
    assert started.wait(5)
    dialog.cancel_install()
    qtbot.waitUntil(lambda: dialog.download.isEnabled(), timeout=5000)
    assert dialog.status.text() == "download cancelled" and dialog.installed.count() == 0


def test_import_and_delete(qtbot, tmp_path) -> None:
    store = ModelStore(tmp_path / "models", demo=tmp_path / "none.gguf")
    dialog = ModelsDialog(store)
    qtbot.addWidget(dialog)
    src = tmp_path / "local.gguf"
    src.write_bytes(b"GGUF")
    with qtbot.waitSignal(dialog.models_changed):
        assert dialog.import_file(src)
    dialog.installed.setCurrentRow(0)
    with qtbot.waitSignal(dialog.models_changed):
        dialog.delete_selected()
    assert dialog.installed.count() == 0 and not (tmp_path / "models" / "local.gguf").exists()
    assert not dialog.import_file(Path(tmp_path / "missing.gguf"))
    assert dialog.status.text().startswith("cannot read model file")
