"""FastConformer RNN-T from NeMo archives (being written)."""

from pathlib import Path

from .errors import ConversionError
from .plan import ConversionPlan


def plan_fastconformer_nemo(src: Path, outtype: str, workdir: Path) -> ConversionPlan:
    raise ConversionError(f"{src}: NeMo conversion is not available yet")
