"""Speech models: the catalogue (Voxtral and FastConformer), download + convert + quantize, local GGUF
import, list and delete, and which one suits this computer (``recommend``).

Usage::

    from captionist.models import default_model_path, ModelStore
    path = default_model_path()        # configured model, else the bundled demo model, else None
    store = ModelStore()               # models under paths.models_dir()
    store.list(); store.import_gguf(Path("x.gguf")); store.delete(entry)
"""

from __future__ import annotations

from pathlib import Path

from captionist import paths
from captionist.models.catalogue import (
    CATALOGUE,
    NEMOTRON_35,
    NEMOTRON_STREAMING,
    PARAKEET_EOU,
    VOXTRAL_REALTIME,
    CatalogueEntry,
    Quantization,
)
from captionist.models.store import ModelEntry, ModelStore, check_gguf
from captionist.settings import load_settings


def default_model_path() -> Path | None:
    """The model the user configured if that file exists, else the bundled demo model, else None."""
    configured = load_settings().settings.model_path
    if configured and Path(configured).is_file():
        return Path(configured)
    demo = paths.bundled_demo_model()
    return demo if demo.is_file() else None


__all__ = [
    "CATALOGUE",
    "NEMOTRON_35",
    "NEMOTRON_STREAMING",
    "PARAKEET_EOU",
    "VOXTRAL_REALTIME",
    "CatalogueEntry",
    "ModelEntry",
    "ModelStore",
    "Quantization",
    "check_gguf",
    "default_model_path",
]
