from __future__ import annotations

import threading
from pathlib import Path

from captionist.models import CATALOGUE, NEMOTRON_STREAMING, PARAKEET_EOU, VOXTRAL_REALTIME, ModelStore
from captionist.models.download import DownloadCancelled, NoNetwork
from captionist.models.recommend import Hardware
from captionist.ui.models_dialog import ModelsDialog

GPU = Hardware(physical_cores=8, ram_gb=32.0, has_gpu=True, gpu="CUDA0")
LAPTOP = Hardware(physical_cores=4, ram_gb=16.0, has_gpu=False, gpu="CPU")
SMALL = Hardware(physical_cores=2, ram_gb=4.0, has_gpu=False, gpu="CPU")


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
    dialog = ModelsDialog(store, installer=installer, hardware=GPU)
    qtbot.addWidget(dialog)
    assert dialog.entry is VOXTRAL_REALTIME  # the recommendation for a computer with a GPU
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
    dialog = ModelsDialog(store, installer=offline, hardware=LAPTOP)
    qtbot.addWidget(dialog)
    dialog.start_install()
    qtbot.waitUntil(lambda: dialog.download.isEnabled(), timeout=5000)
    assert dialog.status.text().startswith("Download failed: cannot reach huggingface.co")

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
    assert dialog.status.text() == "Download cancelled." and dialog.installed.count() == 0
    assert dialog.progress.isHidden()


def test_import_and_delete(qtbot, tmp_path) -> None:
    store = ModelStore(tmp_path / "models", demo=tmp_path / "none.gguf")
    dialog = ModelsDialog(store, hardware=LAPTOP)
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


def test_the_catalogue_offers_every_family_and_recommends_one_for_this_computer(qtbot, tmp_path) -> None:
    store = ModelStore(tmp_path / "models", demo=tmp_path / "none.gguf")
    for hardware, entry, quant in [(LAPTOP, NEMOTRON_STREAMING, "Q8_0"), (SMALL, PARAKEET_EOU, "Q8_0")]:
        dialog = ModelsDialog(store, hardware=hardware)
        qtbot.addWidget(dialog)
        items = [dialog.catalogue.itemText(i) for i in range(dialog.catalogue.count())]
        assert items == [
            f"{e.title} · {e.family}" + (" (recommended)" if e is entry else "") for e in CATALOGUE
        ]
        assert "Voxtral Mini 4B Realtime · Voxtral" in items
        assert dialog.entry is entry and dialog.quant.currentData() == quant
        assert dialog.recommended.text().startswith(f"Recommended for this computer: {entry.title} ({quant})")
    dialog.choose(NEMOTRON_STREAMING.key)
    assert [dialog.quant.itemData(i) for i in range(dialog.quant.count())] == ["F16", "Q8_0", "Q4_K"]
    assert dialog.quant.itemText(0).startswith("F16: 1.2 GB file")
    assert dialog.quant.itemText(1).startswith("Q8_0: 0.67 GB file")
    assert dialog.quant.itemText(2).startswith("Q4_K: 0.37 GB file")
    assert "English" in dialog.about.text() and "punctuation" in dialog.about.text()
    dialog.choose(PARAKEET_EOU.key)
    assert dialog.quant.itemText(0).startswith("F16: 0.24 GB file") and dialog.quant.itemText(1).startswith(
        "Q8_0: 0.13 GB"
    )
    assert "end of each utterance" in dialog.about.text() and "no punctuation" in dialog.about.text()
    dialog.choose(VOXTRAL_REALTIME.key)
    assert dialog.quant.itemText(0).endswith(
        "needs ~9.8 GB RAM (reference quality) - more than this computer has"
    )


def test_installing_a_fastconformer_model_uses_the_chosen_entry(qtbot, tmp_path) -> None:
    calls = []

    def installer(entry, quant, *, cancel, models_dir, on_progress):
        calls.append((entry.key, quant))
        models_dir.mkdir(parents=True, exist_ok=True)
        path = models_dir / entry.file_name(quant)
        path.write_bytes(b"GGUF")
        return path

    store = ModelStore(tmp_path / "models", demo=tmp_path / "none.gguf")
    dialog = ModelsDialog(store, installer=installer, hardware=GPU)
    qtbot.addWidget(dialog)
    dialog.choose(PARAKEET_EOU.key)
    with qtbot.waitSignal(dialog.models_changed, timeout=5000):
        dialog.start_install()
    assert calls == [("parakeet-realtime-eou-120m", "Q8_0")]
    assert dialog.installed.item(0).text().startswith("Parakeet Realtime EOU 120M Q8_0 · FastConformer")
