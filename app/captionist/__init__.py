"""Captionist: live captions from a microphone or computer audio, fully offline.

The speech models (Voxtral Realtime, FastConformer RNN-T) run in the C++ ggml engine
(``captionist._engine``), wrapped by ``captionist.engine``. Entry point: ``python -m captionist``
(the desktop app) or ``captionist <command>`` (see ``captionist --help``).
"""

from captionist._version import __version__

__all__ = ["__version__"]
