"""Checkpoint conversion -> Captionist GGUF (engine/GGUF.md).

Voxtral Realtime (Hugging Face or Mistral folders) and FastConformer RNN-T (Hugging Face Nemotron ASR
Streaming / Nemotron 3.5 ASR folders, NeMo Parakeet Realtime EOU ``.nemo`` archives).

Usage::

    from captionist.convert import convert_checkpoint, ConversionError
    convert_checkpoint(Path("Voxtral-Mini-4B-Realtime-2602"), Path("voxtral.gguf"), outtype="f16")
    convert_checkpoint(Path("parakeet_realtime_eou_120m-v1.nemo"), Path("eou.gguf"), outtype="f32")

No torch needed: safetensors and torch zip checkpoints are memory-mapped and converted one tensor at a
time; the torch pickle is read by a restricted unpickler that never runs code from the file.
"""

from .converter import convert_checkpoint
from .errors import ConversionError

__all__ = ["ConversionError", "convert_checkpoint"]
