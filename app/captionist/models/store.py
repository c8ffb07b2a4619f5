"""The local model folder: list, import a GGUF, delete.

Usage::

    store = ModelStore()                   # paths.models_dir(), plus the bundled demo model
    for m in store.list(): print(m.label())   # "Nemotron Speech Streaming 0.6B Q8_0 · FastConformer (0.7 GB)"
    entry = store.import_gguf(Path("~/Downloads/voxtral-q4.gguf").expanduser())
    store.delete(entry)
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from captionist import paths
from captionist.models.catalogue import entry_of_file
from captionist.models.gguf_header import read_gguf_values
from captionist.models.info import family_name

GGUF_MAGIC = b"GGUF"
DEMO_NAME = "Built-in demo, 28 words"  # the small model shipped in the package (tools/train_demo_model.py)


@dataclass(frozen=True)
class ModelEntry:
    name: str  # the catalogue title and quantization for a model installed from the catalogue
    path: Path
    size_bytes: int
    origin: str  # "local" (in the models folder) | "bundled" | "external" (configured elsewhere)
    family: str | None = None  # "Voxtral", "FastConformer"; None when the file does not say

    def label(self) -> str:
        size = (
            f"{self.size_bytes / 1e9:.1f} GB" if self.size_bytes >= 1e8 else f"{self.size_bytes / 1e6:.0f} MB"
        )
        family = f" · {self.family}" if self.family else ""
        return f"{self.name}{family} ({size})"


def describe_model_file(path: Path, origin: str, name: str | None = None) -> ModelEntry:
    """A ``ModelEntry`` for ``path``: named after its catalogue entry when it was installed from
    the catalogue, its family read from the file's header (``general.architecture``)."""
    known = entry_of_file(path.name)
    if name is None:
        name = f"{known[0].title} {known[1]}" if known else path.stem
    header = read_gguf_values(path, ("general.architecture",))
    family = family_name(header.get("general.architecture")) or (known[0].family if known else None)
    return ModelEntry(name, path, path.stat().st_size, origin, family)


def check_gguf(path: Path) -> None:
    """Raise ValueError unless ``path`` is a readable file that starts with the GGUF magic."""
    try:
        with open(path, "rb") as f:
            magic = f.read(4)
    except OSError as exc:
        raise ValueError(f"cannot read model file {path}: {exc.strerror or exc}") from None
    if magic != GGUF_MAGIC:
        raise ValueError(f"{path} is not a GGUF model file")


class ModelStore:
    def __init__(self, root: Path | None = None, demo: Path | None = None) -> None:
        self.root = root or paths.models_dir()
        self.demo = demo or paths.bundled_demo_model()

    def list(self) -> list[ModelEntry]:
        entries = []
        if self.root.is_dir():
            for p in sorted(self.root.glob("*.gguf")):
                entries.append(describe_model_file(p, "local"))
        if self.demo.is_file():
            entries.append(describe_model_file(self.demo, "bundled", DEMO_NAME))
        return entries

    def import_gguf(self, src: Path) -> ModelEntry:
        """Copy a GGUF file into the models folder (refusing non-GGUF files and name clashes)."""
        src = Path(src)
        check_gguf(src)
        dst = self.root / src.name if src.suffix == ".gguf" else self.root / (src.name + ".gguf")
        if dst.exists():
            raise ValueError(f"a model named {dst.name!r} is already installed")
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = dst.with_name(dst.name + ".part")
        shutil.copyfile(src, tmp)
        tmp.replace(dst)
        return describe_model_file(dst, "local")

    def delete(self, entry: ModelEntry) -> None:
        if entry.origin != "local" or entry.path.parent.resolve() != self.root.resolve():
            raise ValueError(f"{entry.name!r} is not in the models folder and cannot be deleted here")
        caches = _repack_caches(entry.path)
        entry.path.unlink(missing_ok=True)
        for cache in caches:  # the model's re-laid-out copy for this CPU, if it had one
            cache.unlink(missing_ok=True)


def _repack_caches(model: Path) -> list[Path]:
    """The engine's repack caches of ``model`` (none when the engine is not built)."""
    try:
        from captionist.engine import EngineError, repack_cache_files
    except ImportError:
        return []
    try:
        return repack_cache_files(paths.repack_cache_dir(), model)
    except EngineError:
        return []
