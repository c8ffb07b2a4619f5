"""The CLI's one error type and the lazy importer shared by the ``captionist`` subcommands."""

from __future__ import annotations

import importlib
from typing import Any


class CliError(Exception):
    """A user-facing failure: printed as ``captionist: error: <message>``, exit status 2."""


def import_attr(module: str, name: str, what: str) -> Any:
    """``module.name``, imported on first use; a ``CliError`` saying ``what`` is unavailable if not."""
    try:
        mod = importlib.import_module(module)
    except ImportError as exc:
        raise CliError(f"{what} is not available in this installation ({exc})") from None
    attr = getattr(mod, name, None)
    if attr is None:
        raise CliError(f"{what} is not available in this installation ({module}.{name} is missing)")
    return attr
