"""Typed reads from JSON / YAML config objects, each failure a one-line ConversionError naming the key."""

from __future__ import annotations

import math
from typing import Any

from .errors import ConversionError

MISSING: Any = object()


def section(d: dict[str, Any], key: str, where: str, required: bool = True) -> dict[str, Any]:
    value = d.get(key)
    if value is None and not required:
        return {}
    if not isinstance(value, dict):
        raise ConversionError(f"{where} has no {key!r} section")
    return value


def _present(d: dict[str, Any], key: str, where: str, default: Any) -> Any:
    value = d.get(key)
    if value is None:
        if default is MISSING:
            raise ConversionError(f"{where} is missing {key!r}")
        return default
    return value


def get_int(d: dict[str, Any], key: str, where: str, default: Any = MISSING, minimum: int = 1) -> int:
    """Integer value of `key` (>= `minimum`); `default` when absent or null."""
    value = _present(d, key, where, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
        raise ConversionError(f"{where} {key!r} is {value!r}, expected an integer")
    if int(value) < minimum:
        raise ConversionError(f"{where} {key!r} is {value!r}, expected an integer >= {minimum}")
    return int(value)


def get_float(d: dict[str, Any], key: str, where: str, default: Any = MISSING) -> float:
    """Finite number of `key`; `default` when absent or null."""
    value = _present(d, key, where, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConversionError(f"{where} {key!r} is {value!r}, expected a finite number")
    return float(value)


def get_bool(d: dict[str, Any], key: str, where: str, default: Any = MISSING) -> bool:
    value = _present(d, key, where, default)
    if not isinstance(value, bool):
        raise ConversionError(f"{where} {key!r} is {value!r}, expected true or false")
    return value


def get_str(d: dict[str, Any], key: str, where: str, default: Any = MISSING) -> str:
    value = _present(d, key, where, default)
    if not isinstance(value, str):
        raise ConversionError(f"{where} {key!r} is {value!r}, expected a string")
    return value


def int_list(value: Any, what: str, minimum: int = 0) -> list[int]:
    """A non-empty list of integers >= `minimum` (`what` names it in errors)."""
    if not isinstance(value, list) or not value:
        raise ConversionError(f"{what} is {value!r}, expected a non-empty list of integers")
    for v in value:
        if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
            raise ConversionError(f"{what} is {value!r}, expected integers >= {minimum}")
    return list(value)
