from __future__ import annotations

import hashlib
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from captionist import models, paths
from captionist.models import VOXTRAL_REALTIME, ModelStore, default_model_path
from captionist.models.download import (
    ChecksumMismatch,
    DownloadCancelled,
    NoNetwork,
    download_checkpoint,
    list_remote_files,
)
from captionist.models.install import install_model
from captionist.settings import Settings, save_settings

CONTENT = {
    "params.json": b'{"dim": 3072}',
    "consolidated.safetensors": b"W" * 5000,
    "tekken.json": b"{}",
    "config.json": b"{}",
    "model.safetensors": b"H" * 4000,
}


def _sibling(name: str, lfs: bool) -> SimpleNamespace:
    sha = hashlib.sha256(CONTENT[name]).hexdigest() if lfs else None
    return SimpleNamespace(
        rfilename=name, size=len(CONTENT[name]), lfs=SimpleNamespace(sha256=sha) if lfs else None
    )


class FakeApi:
    def __init__(self, error: Exception | None = None) -> None:
        self.error = error

    def model_info(self, repo_id, revision=None, files_metadata=False):
        if self.error:
            raise self.error
        assert repo_id == "mistralai/Voxtral-Mini-4B-Realtime-2602" and files_metadata
        return SimpleNamespace(siblings=[_sibling(n, n.endswith(".safetensors")) for n in CONTENT])


def fake_downloader(corrupt: str | None = None, calls: list | None = None):
    def download(repo_id, filename, revision=None, local_dir=None, tqdm_class=None):
        if calls is not None:
            calls.append(filename)
        data = CONTENT[filename] if filename != corrupt else b"X" * len(CONTENT[filename])
        bar = tqdm_class(total=len(data))
        for i in range(0, len(data), 1000):
            bar.update(min(1000, len(data) - i))
        path = Path(local_dir) / filename
        path.write_bytes(data)
        return str(path)

    return download


def test_default_model_path_prefers_configured_then_demo(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(paths, "bundled_demo_model", lambda: tmp_path / "demo.gguf")
    assert default_model_path() is None
    (tmp_path / "demo.gguf").write_bytes(b"GGUF")
    assert default_model_path() == tmp_path / "demo.gguf"
    mine = tmp_path / "mine.gguf"
    mine.write_bytes(b"GGUF")
    save_settings(Settings(model_path=str(mine)))
    assert default_model_path() == mine
    mine.unlink()
    assert default_model_path() == tmp_path / "demo.gguf"  # a configured file that vanished is skipped


def test_store_import_list_delete(tmp_path) -> None:
    store = ModelStore(tmp_path / "models", demo=tmp_path / "demo.gguf")
    src = tmp_path / "voxtral.gguf"
    src.write_bytes(b"GGUF" + bytes(10))
    entry = store.import_gguf(src)
    assert [(e.name, e.size_bytes, e.origin) for e in store.list()] == [("voxtral", 14, "local")]
    with pytest.raises(ValueError, match="already installed"):
        store.import_gguf(src)
    bad = tmp_path / "x.bin"
    bad.write_bytes(b"PK\x03\x04")
    with pytest.raises(ValueError, match="is not a GGUF model file"):
        store.import_gguf(bad)
    store.delete(entry)
    assert store.list() == []
    with pytest.raises(ValueError, match="cannot be deleted"):
        store.delete(models.ModelEntry("demo", tmp_path / "demo.gguf", 4, "bundled"))


def test_catalogue_quantizations() -> None:
    q = VOXTRAL_REALTIME.quantization("Q4_K_M")
    assert (
        q.ram_gb < VOXTRAL_REALTIME.quantization("Q8_0").ram_gb < VOXTRAL_REALTIME.quantization("F16").ram_gb
    )
    with pytest.raises(ValueError, match="unknown quantization 'Q2_K'; choose one of F16, Q8_0"):
        VOXTRAL_REALTIME.quantization("Q2_K")


def test_remote_listing_picks_one_layout() -> None:
    names = [f.name for f in list_remote_files(VOXTRAL_REALTIME, FakeApi())]
    assert sorted(names) == ["consolidated.safetensors", "params.json", "tekken.json"]


def test_no_network_is_said_plainly() -> None:
    with pytest.raises(NoNetwork, match="cannot reach huggingface.co .*import a local GGUF"):
        list_remote_files(VOXTRAL_REALTIME, FakeApi(ConnectionError("Name or service not known")))


def test_download_progress_and_checksum(tmp_path) -> None:
    seen: list[tuple[int, int]] = []
    dest = download_checkpoint(
        VOXTRAL_REALTIME,
        tmp_path / "dl",
        progress=lambda d, t: seen.append((d, t)),
        cancel=threading.Event(),
        api=FakeApi(),
        downloader=fake_downloader(),
    )
    assert (dest / "consolidated.safetensors").read_bytes() == CONTENT["consolidated.safetensors"]
    total = sum(len(CONTENT[n]) for n in ("params.json", "consolidated.safetensors", "tekken.json"))
    assert seen[-1] == (total, total) and all(a[0] <= b[0] for a, b in zip(seen, seen[1:], strict=False))
    with pytest.raises(ChecksumMismatch, match="consolidated.safetensors does not match"):
        download_checkpoint(
            VOXTRAL_REALTIME,
            tmp_path / "bad",
            progress=lambda d, t: None,
            cancel=threading.Event(),
            api=FakeApi(),
            downloader=fake_downloader(corrupt="consolidated.safetensors"),
        )
    assert not (tmp_path / "bad" / "consolidated.safetensors").exists()


def test_download_cancel(tmp_path) -> None:
    cancel = threading.Event()

    def progress(done: int, total: int) -> None:
        if done > 1000:
            cancel.set()

    calls: list[str] = []
    with pytest.raises(DownloadCancelled):
        download_checkpoint(
            VOXTRAL_REALTIME,
            tmp_path / "dl",
            progress=progress,
            cancel=cancel,
            api=FakeApi(),
            downloader=fake_downloader(calls=calls),
        )
    assert calls == ["tekken.json", "params.json", "consolidated.safetensors"]  # smallest first
    assert not (tmp_path / "dl" / "consolidated.safetensors").exists()  # stopped mid-file


def test_install_runs_stages_and_cleans_up(tmp_path) -> None:
    stages: list[str] = []
    converted: list[Path] = []

    def convert(src: Path, out: Path) -> None:
        assert (src / "params.json").is_file()
        converted.append(out)
        out.write_bytes(b"GGUF-f16")

    def quantize(src: Path, dst: Path, type_name: str, progress) -> None:
        progress(50, 100)
        dst.write_bytes(b"GGUF-" + type_name.encode())
        progress(100, 100)

    def on_progress(stage: str, done: int, total: int) -> None:
        if not stages or stages[-1] != stage:
            stages.append(stage)

    path = install_model(
        VOXTRAL_REALTIME,
        "Q4_K_M",
        on_progress=on_progress,
        cancel=threading.Event(),
        models_dir=tmp_path / "models",
        convert=convert,
        quantize=quantize,
        download_kwargs={"api": FakeApi(), "downloader": fake_downloader()},
    )
    assert stages == ["download", "convert", "quantize", "done"]
    assert path.name == "voxtral-mini-4b-realtime-q4_k_m.gguf" and path.read_bytes() == b"GGUF-Q4_K_M"
    assert sorted(p.name for p in (tmp_path / "models").iterdir()) == [path.name]
    assert not converted[0].exists()
