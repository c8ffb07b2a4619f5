"""A small JSON list in the app's data folder, read and written so that it can never fail anyone.

Usage::

    items = read_json_list(path, max_bytes=1 << 20)   # [] if missing, too big or not a JSON list
    folder = absolute_path(item)                      # an item as a Path, or None if it is no path
    ok = write_json_list(path, items)                 # durable; False if it could not be written

For the lists crash recovery keeps (``transcript.folders``, ``transcript.abandoned``): a file that
cannot be read counts as empty, and one that cannot be written is skipped. Callers check each item.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from captionist.atomic_file import replace_file

MAX_PATH = 4096  # a longer string in a list is not a path we wrote


def read_json_list(path: Path, max_bytes: int) -> list[Any]:
    """The list in ``path``; [] if it is missing, unreadable, over ``max_bytes`` or not a list."""
    try:
        with open(path, "rb") as f:
            raw = f.read(max_bytes + 1)
        data = json.loads(raw.decode("utf-8")) if len(raw) <= max_bytes else None
    except (OSError, ValueError, RecursionError):
        return []
    return data if isinstance(data, list) else []


def absolute_path(item: object) -> Path | None:
    """``item`` as a ``Path`` if it is an absolute path as these lists store one, else None."""
    if isinstance(item, str) and 0 < len(item) <= MAX_PATH and "\0" not in item and Path(item).is_absolute():
        return Path(item)
    return None


def write_json_list(path: Path, items: list[Any]) -> bool:
    """Write ``items`` to ``path`` durably (its folder made if needed); False if that failed."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        replace_file(path, json.dumps(items, indent=1) + "\n", durable=True)
    except (OSError, ValueError):
        return False
    return True
