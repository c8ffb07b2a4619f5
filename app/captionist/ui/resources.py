"""Find the app's icon and style sheet (``resources/`` in a checkout, ``captionist/resources`` when
installed or frozen, see ``captionist.frozen``) and load them; missing files fall back to Qt defaults."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtGui import QIcon

from captionist import frozen

_HERE = Path(__file__).resolve()
_BUNDLED = frozen.resource_dir()
SEARCH = ((_BUNDLED,) if _BUNDLED else ()) + (_HERE.parents[1] / "resources", _HERE.parents[3] / "resources")


def resource(name: str) -> Path | None:
    for folder in SEARCH:
        if (folder / name).is_file():
            return folder / name
    return None


def app_icon() -> QIcon:
    path = resource("captionist.svg")
    return QIcon(str(path)) if path else QIcon()


def style_sheet() -> str:
    path = resource("captionist.qss")
    return path.read_text(encoding="utf-8") if path else ""
