"""FastConformer RNN-T from Hugging Face folders (being written; see fastconformer_nemo.py)."""

from pathlib import Path

from .errors import ConversionError
from .plan import ConversionPlan

HF_MODEL_TYPES = ("nemotron_asr_streaming", "nemotron3_5_asr")


def plan_fastconformer_hf(src: Path, outtype: str) -> ConversionPlan:
    raise ConversionError(f"{src}: FastConformer conversion is not available yet")
