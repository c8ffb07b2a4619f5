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


# --- the FastConformer models beside Voxtral ------------------------------------------------------

from captionist.models import CATALOGUE, NEMOTRON_35, NEMOTRON_STREAMING, PARAKEET_EOU  # noqa: E402
from captionist.models.catalogue import BYTES_PER_WEIGHT, entry_of_file, quantized_gb  # noqa: E402
from captionist.models.gguf_header import read_gguf_values  # noqa: E402
from captionist.models.languages import find_choice, language_choices  # noqa: E402
from captionist.models.recommend import Recommendation, probe_gpu, recommend  # noqa: E402


@pytest.mark.parametrize(
    ("cores", "ram", "gpu", "key", "quant"),
    [
        (8, 32.0, True, "voxtral-mini-4b-realtime", "Q4_K_M"),  # a GPU: Voxtral
        (2, 4.0, True, "voxtral-mini-4b-realtime", "Q4_K_M"),
        (4, 8.0, False, "nemotron-speech-streaming-0.6b", "Q8_0"),  # exactly the thresholds
        (16, 64.0, False, "nemotron-speech-streaming-0.6b", "Q8_0"),
        (3, 64.0, False, "parakeet-realtime-eou-120m", "Q8_0"),  # too few cores
        (8, 7.9, False, "parakeet-realtime-eou-120m", "Q8_0"),  # too little RAM
        (None, None, False, "parakeet-realtime-eou-120m", "Q8_0"),  # unknown: the safe choice
    ],
)
def test_recommendation_rule(cores, ram, gpu, key, quant) -> None:
    r = recommend(cores, ram, gpu)
    assert isinstance(r, Recommendation) and (r.entry.key, r.quantization) == (key, quant)
    assert r.quantization in r.entry.quantization_types and r.reason


def test_gpu_probe_reads_the_backend_auto_picks() -> None:
    class Loaded:
        def __init__(self, backend: str) -> None:
            self.info = {"backend": backend}

    assert probe_gpu(Path("demo.gguf"), lambda path, backend: Loaded("CUDA0")) == "CUDA0"

    def broken(path, backend):
        raise RuntimeError("no engine")

    assert probe_gpu(Path("demo.gguf"), broken) == "CPU"
    assert probe_gpu()  # the real engine with the bundled demo model: "CPU" here, a GPU's name elsewhere


def test_catalogue_sizes_come_from_parameter_counts() -> None:
    assert [e.family for e in CATALOGUE] == ["FastConformer", "FastConformer", "FastConformer", "Voxtral"]
    gb = {q.type_name: q.file_gb for q in NEMOTRON_STREAMING.quantizations}
    assert gb["F16"] == pytest.approx(1.2, abs=0.05)
    assert gb["Q8_0"] == pytest.approx(0.65, abs=0.03) and gb["Q4_K"] == pytest.approx(0.4, abs=0.05)
    gb = {q.type_name: q.file_gb for q in PARAKEET_EOU.quantizations}
    assert gb == {"F16": pytest.approx(0.24, abs=0.01), "Q8_0": pytest.approx(0.13, abs=0.01)}
    gb = {q.type_name: q.file_gb for q in VOXTRAL_REALTIME.quantizations}
    assert gb["F16"] == pytest.approx(8.9, abs=0.05) and gb["Q4_K_M"] == pytest.approx(2.7, abs=0.05)
    for e in CATALOGUE:
        for q in e.quantizations:
            assert q.file_gb == quantized_gb(e.params_b, e.kept_f32_params_b, q.type_name)
            assert q.ram_gb == pytest.approx(q.file_gb + e.runtime_gb)
    assert set(BYTES_PER_WEIGHT) >= {t for e in CATALOGUE for t in e.quantization_types}
    assert entry_of_file("nemotron-3.5-asr-0.6b-q4_k.gguf") == (NEMOTRON_35, "Q4_K")
    assert entry_of_file("my-own.gguf") is None


def test_what_each_model_is_good_for_is_stated() -> None:
    assert "13 languages" in VOXTRAL_REALTIME.features and "punctuation" in VOXTRAL_REALTIME.features
    assert "about 40 languages" in NEMOTRON_35.features
    assert "end of each utterance" in PARAKEET_EOU.features and "no punctuation" in PARAKEET_EOU.features
    assert "80, 160, 560 or 1120 ms" in NEMOTRON_STREAMING.features
    assert all(e.speed and e.good_for for e in CATALOGUE)


class RepoApi:
    """A hub with one repository of the given file names (LFS hashes for the big ones)."""

    def __init__(self, repo_id: str, files: dict[str, bytes]) -> None:
        self.repo_id, self.files = repo_id, files

    def model_info(self, repo_id, revision=None, files_metadata=False):
        assert repo_id == self.repo_id
        siblings = [
            SimpleNamespace(
                rfilename=n,
                size=len(d),
                lfs=SimpleNamespace(sha256=hashlib.sha256(d).hexdigest()) if len(d) > 100 else None,
            )
            for n, d in self.files.items()
        ]
        return SimpleNamespace(siblings=siblings)

    def downloader(self, repo_id, filename, revision=None, local_dir=None, tqdm_class=None):
        data = self.files[filename]
        tqdm_class(total=len(data)).update(len(data))
        (Path(local_dir) / filename).write_bytes(data)
        return str(Path(local_dir) / filename)


NEMOTRON_REPO = {
    "config.json": b"{}",
    "model.safetensors": b"W" * 500,
    "tokenizer.json": b"{}",
    "tokenizer_config.json": b"{}",
    "processor_config.json": b"{}",
    "README.md": b"# card",
    ".gitattributes": b"*",
}


def test_the_files_to_fetch_are_each_entrys_data(tmp_path) -> None:
    api = RepoApi(NEMOTRON_STREAMING.repo_id, NEMOTRON_REPO)
    names = sorted(f.name for f in list_remote_files(NEMOTRON_STREAMING, api))
    assert names == [
        "config.json",
        "model.safetensors",
        "processor_config.json",
        "tokenizer.json",
        "tokenizer_config.json",
    ]
    src = download_checkpoint(
        NEMOTRON_STREAMING,
        tmp_path / "n",
        progress=lambda d, t: None,
        cancel=threading.Event(),
        api=api,
        downloader=api.downloader,
    )
    assert src == tmp_path / "n" and (src / "model.safetensors").is_file()  # the converter reads the folder

    nemo = "parakeet_realtime_eou_120m-v1.nemo"
    api = RepoApi(PARAKEET_EOU.repo_id, {nemo: b"N" * 300, "README.md": b"# card"})
    src = download_checkpoint(
        PARAKEET_EOU,
        tmp_path / "p",
        progress=lambda d, t: None,
        cancel=threading.Event(),
        api=api,
        downloader=api.downloader,
    )
    assert src == tmp_path / "p" / nemo and src.is_file()  # a .nemo is a file, not a folder
    assert not (tmp_path / "p" / "README.md").exists()

    with pytest.raises(ValueError, match="has none of the files this app can convert"):
        list_remote_files(PARAKEET_EOU, RepoApi(PARAKEET_EOU.repo_id, {"README.md": b"#"}))


def test_install_converts_the_nemo_file_and_quantizes(tmp_path) -> None:
    nemo = "parakeet_realtime_eou_120m-v1.nemo"
    api = RepoApi(PARAKEET_EOU.repo_id, {nemo: b"N" * 300})
    converted: list[Path] = []

    def convert(src: Path, out: Path) -> None:
        converted.append(src)
        out.write_bytes(b"GGUF-f16")

    def quantize(src: Path, dst: Path, type_name: str, progress) -> None:
        dst.write_bytes(b"GGUF-" + type_name.encode())

    path = install_model(
        PARAKEET_EOU,
        "Q8_0",
        on_progress=lambda *a: None,
        cancel=threading.Event(),
        models_dir=tmp_path / "models",
        convert=convert,
        quantize=quantize,
        download_kwargs={"api": api, "downloader": api.downloader},
    )
    assert converted == [paths.download_cache_dir() / PARAKEET_EOU.key / nemo]
    assert path.name == "parakeet-realtime-eou-120m-q8_0.gguf" and path.read_bytes() == b"GGUF-Q8_0"


def _write_gguf(path: Path, architecture: str, **kv) -> Path:
    from gguf import GGUFWriter

    w = GGUFWriter(str(path), architecture)
    w.add_string("general.name", "a test file")
    w.add_uint32("test.count", 7)
    w.add_array("test.floats", [0.5, 1.5])
    for key, value in kv.items():
        w.add_array(key.replace("__", "."), value)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def test_the_model_picker_names_each_models_family(tmp_path) -> None:
    root = tmp_path / "models"
    root.mkdir()
    _write_gguf(root / "nemotron-speech-streaming-0.6b-q8_0.gguf", "fastconformer_rnnt")
    _write_gguf(root / "voxtral-mini-4b-realtime-q4_k_m.gguf", "voxtral_realtime")
    _write_gguf(root / "imported.gguf", "fastconformer_rnnt")
    (root / "unknown.gguf").write_bytes(b"GGUF" + bytes(20))
    store = ModelStore(root, demo=paths.bundled_demo_model())
    labels = [e.label().rsplit(" (", 1)[0] for e in store.list()]
    assert labels == [
        "imported · FastConformer",
        "Nemotron Speech Streaming 0.6B Q8_0 · FastConformer",
        "unknown",
        "Voxtral Mini 4B Realtime Q4_K_M · Voxtral",
        "Built-in demo, 28 words · Voxtral",
    ]


def test_gguf_header_values_and_unreadable_files(tmp_path) -> None:
    path = _write_gguf(tmp_path / "m.gguf", "fastconformer_rnnt", fastconformer__prompt__names=["de", "auto"])
    values = read_gguf_values(
        path, ("general.architecture", "test.count", "test.floats", "fastconformer.prompt.names")
    )
    assert values == {
        "general.architecture": "fastconformer_rnnt",
        "test.count": 7,
        "test.floats": [0.5, 1.5],
        "fastconformer.prompt.names": ["de", "auto"],
    }
    data = path.read_bytes()
    for broken in (b"", b"GGUF", data[: len(data) // 2], b"PK\x03\x04" + data[4:], data[:24] + b"\xff" * 40):
        (tmp_path / "x.gguf").write_bytes(broken)
        assert isinstance(read_gguf_values(tmp_path / "x.gguf", ("general.architecture",)), dict)
    assert read_gguf_values(tmp_path / "missing.gguf", ("general.architecture",)) == {}


def test_language_entries_one_per_language_with_readable_names() -> None:
    from captionist.convert.nemotron_prompts import DEFAULT_PROMPT_DICTIONARY as slots

    choices = language_choices(list(slots), slots)
    labels = [c.label for c in choices]
    assert labels[0] == "Auto" and choices[0].code == "auto"
    assert "German (de-DE)" in labels and "English (en-US)" in labels and "English (en-GB)" in labels
    assert len(labels) == len(set(slots.values())) == len(set(labels))  # one entry per language slot
    assert find_choice(choices, "de").code == "de-DE" and find_choice(choices, "enGB").code == "en-GB"
    assert find_choice(choices, "es").code == "es-US"  # "es" is the es-US slot in this dictionary
    assert find_choice(choices, "xx") is None
    # without slot information only spelling variants merge
    assert [c.label for c in language_choices(["auto", "de", "en-GB", "enGB"])] == [
        "Auto",
        "English (en-GB)",
        "German (de)",
    ]


def test_readme_quantization_table_is_the_catalogues() -> None:
    from captionist.models.size_table import README_BEGIN, README_END, readme_block

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    assert README_BEGIN in readme and README_END in readme, "README.md lost the quantization table"
    shown = readme[readme.index(README_BEGIN) : readme.index(README_END) + len(README_END)]
    assert shown == readme_block(), "README's table differs: python -m captionist.models.size_table"
    for entry in CATALOGUE:  # every quantization the Models window offers is in the table
        row = next(line for line in shown.splitlines() if line.startswith(f"| {entry.title} |"))
        assert row.count("RAM ~") == len(entry.quantization_types)
