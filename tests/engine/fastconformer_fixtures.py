"""The FastConformer reference fixtures (tests/data/fastconformer, made by the references: NeMo for
Parakeet-EOU, transformers for the Nemotrons) and our conversions of them."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile

DATA = Path(__file__).resolve().parent.parent / "data"
FASTCONFORMER = DATA / "fastconformer"
NEMO_MODELS = ("parakeet_eou_tiny", "parakeet_eou_tiny_ctx")
HF_MODELS = ("nemotron_tiny", "nemotron_tiny_ctx", "nemotron35_tiny")


def source(model: str) -> Path:
    """The checkpoint as users download it: a .nemo archive or a Hugging Face folder."""
    nemo = FASTCONFORMER / model / "model.nemo"
    return nemo if nemo.exists() else FASTCONFORMER / model / "hf"


@cache
def expected(model: str) -> dict[str, Any]:
    path = FASTCONFORMER / model / "expected.json"
    if not path.exists():
        pytest.skip(f"fixture {path} is not committed")
    return json.loads(path.read_text())


def clip(model: str, name: str) -> np.ndarray:
    """A fixture clip as float32 samples (the shared clips, or one kept beside the model)."""
    for folder in (FASTCONFORMER / model, DATA / "audio"):
        if (folder / f"{name}.wav").exists():
            pcm, rate = soundfile.read(folder / f"{name}.wav", dtype="float32")
            assert rate == 16000
            return pcm
    raise FileNotFoundError(name)
