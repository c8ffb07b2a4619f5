"""Download a catalogue checkpoint from the Hugging Face hub: progress, resume, SHA-256, cancel.

Usage::

    cancel = threading.Event()
    folder = download_checkpoint(VOXTRAL_REALTIME, paths.download_cache_dir() / "voxtral",
                                 progress=lambda done, total: ..., cancel=cancel)

Only one weight layout is fetched: Mistral's (``params.json`` + ``consolidated*.safetensors``)
when the repository has it, else the Hugging Face one; plus ``tekken.json``. Files land in
``dest`` via ``hf_hub_download(local_dir=...)``, which resumes partial files and skips finished
ones. Every file whose SHA-256 the hub publishes (LFS files) is verified; a mismatch deletes the
file and raises ``ChecksumMismatch``. Without network, ``NoNetwork`` says so plainly.
``cancel`` is checked on every progress tick and between files (``DownloadCancelled``).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from captionist.models.catalogue import CatalogueEntry

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


def _wanted(names: set[str]) -> set[str]:
    mistral = {n for n in names if n.startswith("consolidated") and n.endswith(".safetensors")}
    if "params.json" in names and mistral:
        chosen = mistral | {"params.json"}
    else:
        chosen = {n for n in names if n.startswith("model") and n.endswith((".safetensors", ".index.json"))}
        chosen |= {
            n for n in ("config.json", "preprocessor_config.json", "generation_config.json") if n in names
        }
    return chosen | ({"tekken.json"} & names)


def list_remote_files(entry: CatalogueEntry, api: Any = None) -> list[RemoteFile]:
    """The files of ``entry`` to download, with sizes and published SHA-256 (raises NoNetwork)."""
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
    names = _wanted({s.rfilename for s in siblings})
    files = []
    for s in siblings:
        if s.rfilename in names:
            lfs = getattr(s, "lfs", None)
            sha = getattr(lfs, "sha256", None) if lfs is not None else None
            files.append(RemoteFile(s.rfilename, int(s.size or 0), sha))
    if not any(f.name.endswith(".safetensors") for f in files):
        raise ValueError(f"{entry.repo_id} has no safetensors weights this app can convert")
    return sorted(files, key=lambda f: f.size)


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
    """Fetch the checkpoint into ``dest`` (resumable) and return ``dest``."""
    files = list_remote_files(entry, api)
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
    return dest
