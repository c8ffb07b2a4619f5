"""Install a catalogue model: download, convert to GGUF, quantize; each stage reports progress.

Usage::

    path = install_model(NEMOTRON_STREAMING, "Q8_0", on_progress=lambda stage, done, total: ...,
                         cancel=threading.Event())

Stages: ``"download"`` (bytes), ``"convert"`` (0/1, the converter reports no finer progress; it
detects the architecture, and reads a folder or a ``.nemo`` file as the download gives it),
``"quantize"`` (bytes written), ``"done"``. The F16 intermediate is deleted after quantizing; the
final file appears atomically in the models folder. Cancel is honoured during the download and
between stages. The downloaded checkpoint stays in ``paths.download_cache_dir()`` so a failed
conversion can be retried without downloading again.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from captionist import paths
from captionist.models.catalogue import CatalogueEntry
from captionist.models.download import DownloadCancelled, download_checkpoint

StageProgress = Callable[[str, int, int], None]


def total_ram_gb() -> float | None:
    """Physical memory in GB where the OS tells us, else None."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1e9
    except (ValueError, OSError, AttributeError):
        return None


def _default_convert(src: Path, out: Path) -> None:
    from captionist.convert import convert_checkpoint

    convert_checkpoint(src, out, outtype="f16", progress=False)


def _default_quantize(src: Path, dst: Path, type_name: str, progress: Callable[[int, int], None]) -> None:
    from captionist.engine import quantize

    quantize(src, dst, type_name, progress=progress)


def install_model(
    entry: CatalogueEntry,
    quant: str,
    *,
    on_progress: StageProgress,
    cancel: threading.Event,
    models_dir: Path | None = None,
    download: Callable[..., Path] = download_checkpoint,
    convert: Callable[[Path, Path], None] = _default_convert,
    quantize: Callable[[Path, Path, str, Callable[[int, int], None]], None] = _default_quantize,
    download_kwargs: dict[str, Any] | None = None,
) -> Path:
    entry.quantization(quant)  # validates the name
    models_dir = models_dir or paths.models_dir()
    final = models_dir / entry.file_name(quant)
    ckpt = download(
        entry,
        paths.download_cache_dir() / entry.key,
        progress=lambda d, t: on_progress("download", d, t),
        cancel=cancel,
        **(download_kwargs or {}),
    )
    if cancel.is_set():
        raise DownloadCancelled("installation cancelled")
    models_dir.mkdir(parents=True, exist_ok=True)
    f16 = models_dir / f".{entry.key}-f16.gguf.part"
    part = final.with_name(final.name + ".part")
    try:
        on_progress("convert", 0, 1)
        convert(ckpt, f16)
        on_progress("convert", 1, 1)
        if cancel.is_set():
            raise DownloadCancelled("installation cancelled")
        if quant.upper() == "F16":
            f16.replace(final)
        else:
            quantize(f16, part, quant, lambda d, t: on_progress("quantize", d, t))
            part.replace(final)
    finally:
        f16.unlink(missing_ok=True)
        part.unlink(missing_ok=True)
    on_progress("done", 1, 1)
    return final
