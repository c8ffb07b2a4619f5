"""Download a catalogue checkpoint from the Hugging Face hub: progress, resume, SHA-256, cancel.

Usage::

    cancel = threading.Event()
    src = download_checkpoint(NEMOTRON_STREAMING, paths.download_cache_dir() / "nemotron",
                              progress=lambda done, total: ..., cancel=cancel)
    convert_checkpoint(src, ...)       # the folder, or the one file the converter reads (.nemo)

Which files are fetched is the entry's data (``CatalogueEntry.layouts``): the first layout whose
required files the repository has (Voxtral: Mistral's ``params.json`` + ``consolidated*.safetensors``
before the Hugging Face layout; Nemotron: the Hugging Face folder; Parakeet-EOU: one ``.nemo``).
Files land in ``dest`` via ``hf_hub_download(local_dir=...)``, which resumes partial files and skips
finished ones. Every file whose SHA-256 the hub publishes (LFS files) is verified; a mismatch deletes the
file and raises ``ChecksumMismatch``. Without network, ``NoNetwork`` says so plainly.
``cancel`` is checked on every progress tick and between files (``DownloadCancelled``).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

from tqdm import tqdm

from captionist.models.catalogue import CatalogueEntry, FileLayout

Progress = Callable[[int, int], None]


class NoNetwork(RuntimeError):
    """The hub cannot be reached."""


class DownloadCancelled(RuntimeError):
    """The user cancelled."""


class ChecksumMismatch(RuntimeError):
    """A downloaded file does not match its published SHA-256."""


@dataclass(frozen=True)
class RemoteFile:
    name: str
    size: int
    sha256: str | None


def choose_layout(entry: CatalogueEntry, names: set[str]) -> FileLayout:
    """The first of ``entry.layouts`` that the repository's files ``names`` hold (ValueError if none)."""
    for layout in entry.layouts:
        if layout.matches(names):
            return layout
    wanted = " or ".join("+".join(layout.required) for layout in entry.layouts)
    raise ValueError(f"{entry.repo_id} has none of the files this app can convert (looked for {wanted})")


def list_remote_files(entry: CatalogueEntry, api: Any = None) -> list[RemoteFile]:
    """The files of ``entry`` to download, smallest first, with sizes and published SHA-256
    (raises NoNetwork, or ValueError when the repository has no layout this app converts)."""
    if api is None:
        from huggingface_hub import HfApi

        api = HfApi()
    try:
        info = api.model_info(entry.repo_id, revision=entry.revision, files_metadata=True)
    except Exception as exc:  # httpx/requests/hub errors differ between versions; all mean "cannot fetch"
        text = " ".join(str(exc).split())[:200]
        if "401" in text or "403" in text or "gated" in text.lower():
            raise NoNetwork(
                f"the hub refused {entry.repo_id} ({text}); accept its terms on huggingface.co "
                "and log in with `hf auth login`, or import a local GGUF"
            ) from exc
        raise NoNetwork(
            f"cannot reach huggingface.co ({text}); check the network, or import a local GGUF file instead"
        ) from exc
    siblings = list(info.siblings or [])
    available = {s.rfilename for s in siblings}
    names = choose_layout(entry, available).select(available)
    files = []
    for s in siblings:
        if s.rfilename in names:
            lfs = getattr(s, "lfs", None)
            sha = getattr(lfs, "sha256", None) if lfs is not None else None
            files.append(RemoteFile(s.rfilename, int(s.size or 0), sha))
    return sorted(files, key=lambda f: (f.size, f.name))


def sha256_of(path: Path, chunk: int = 1 << 22) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def _progress_bar(progress: Progress, base: int, total: int, cancel: threading.Event) -> type[tqdm]:
    class Bar(tqdm):  # type: ignore[misc] - tqdm is untyped
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs["disable"] = True
            kwargs.pop("name", None)  # huggingface_hub passes its logger name; plain tqdm rejects it
            super().__init__(*args, **kwargs)
            self.done = int(kwargs.get("initial") or 0)  # bytes already there when resuming

        def update(self, n: float | None = 1) -> bool | None:
            self.done += int(n or 0)
            progress(base + self.done, total)
            if cancel.is_set():
                raise DownloadCancelled("download cancelled")
            return None

    return Bar


def download_checkpoint(
    entry: CatalogueEntry,
    dest: Path,
    *,
    progress: Progress,
    cancel: threading.Event,
    api: Any = None,
    downloader: Callable[..., str] | None = None,
) -> Path:
    """Fetch the checkpoint into ``dest`` (resumable); return what the converter reads: ``dest``,
    or the one file the layout names (``FileLayout.convert_from``)."""
    files = list_remote_files(entry, api)
    layout = choose_layout(entry, {f.name for f in files})
    if downloader is None:
        from huggingface_hub import hf_hub_download as downloader
    total = sum(f.size for f in files)
    done = 0
    dest.mkdir(parents=True, exist_ok=True)
    for f in files:
        if cancel.is_set():
            raise DownloadCancelled("download cancelled")
        try:
            path = Path(
                downloader(
                    entry.repo_id,
                    f.name,
                    revision=entry.revision,
                    local_dir=dest,
                    tqdm_class=_progress_bar(progress, done, total, cancel),
                )
            )
        except DownloadCancelled:
            raise
        except OSError as exc:
            raise NoNetwork(f"download of {f.name} failed ({exc}); run it again to resume") from exc
        if f.sha256 and sha256_of(path) != f.sha256:
            path.unlink(missing_ok=True)
            raise ChecksumMismatch(
                f"{f.name} does not match its published SHA-256; it was deleted, try again"
            )
        done += f.size
        progress(done, total)
    if layout.convert_from is None:
        return dest
    return dest / sorted(f.name for f in files if fnmatch(f.name, layout.convert_from))[0]
