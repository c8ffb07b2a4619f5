"""Checkpoint conversion: Hugging Face or Mistral Voxtral Realtime checkpoints -> Captionist GGUF.

Usage::

    from captionist.convert import convert_checkpoint, ConversionError
    convert_checkpoint(Path("Voxtral-Mini-4B-Realtime-2602"), Path("voxtral.gguf"), outtype="f16")

No torch needed: safetensors are memory-mapped and converted one tensor at a time.
"""

from .converter import convert_checkpoint
from .errors import ConversionError

__all__ = ["ConversionError", "convert_checkpoint"]
