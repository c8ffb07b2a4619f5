"""Captionist's version from its one source, app/captionist/_version.py, for the packaging scripts.

Usage: ``python packaging/version.py`` prints it; ``captionist.spec`` imports ``read_version``.
"""

import re
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[1] / "app" / "captionist" / "_version.py"


def read_version() -> str:
    match = re.search(r'__version__\s*=\s*"([^"]+)"', SOURCE.read_text(encoding="utf-8"))
    if match is None:
        raise ValueError(f'no __version__ = "..." in {SOURCE}')
    return match[1]


if __name__ == "__main__":
    print(read_version())
