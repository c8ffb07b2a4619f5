"""packaging/make_icons.py: every icon size, the .ico and the .icns, from resources/captionist.svg."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from make_icons import ICNS_TYPES, ICO_SIZES, PNG_SIZES, make_icons

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def icons(qapp: object, tmp_path_factory: pytest.TempPathFactory) -> Path:
    # pytest-qt's QApplication first: make_icons would otherwise create a QGuiApplication, and every
    # later test that builds a widget in this process would abort.
    out = tmp_path_factory.mktemp("icons")
    make_icons(ROOT / "resources" / "captionist.svg", out)
    return out


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def test_a_png_at_every_size(icons: Path) -> None:
    for size in PNG_SIZES:
        assert png_size((icons / "png" / f"captionist-{size}.png").read_bytes()) == (size, size)


def test_the_png_is_the_icon_not_a_blank(icons: Path) -> None:
    from PySide6.QtGui import QImage

    image = QImage(str(icons / "png" / "captionist-64.png"))
    assert image.pixelColor(0, 0).alpha() == 0  # transparent corner
    assert image.pixelColor(32, 20).alpha() == 255  # the dark caption box


def test_ico_holds_one_png_per_size(icons: Path) -> None:
    data = (icons / "captionist.ico").read_bytes()
    reserved, kind, count = struct.unpack("<HHH", data[:6])
    assert (reserved, kind, count) == (0, 1, len(ICO_SIZES))
    for i, size in enumerate(ICO_SIZES):
        entry = data[6 + 16 * i : 22 + 16 * i]
        width, height, _, _, planes, bpp, length, offset = struct.unpack("<BBBBHHII", entry)
        assert (width or 256, height or 256, planes, bpp) == (size, size, 1, 32)
        assert png_size(data[offset : offset + length]) == (size, size)


def test_icns_holds_every_retina_size(icons: Path) -> None:
    data = (icons / "captionist.icns").read_bytes()
    assert data[:4] == b"icns" and struct.unpack(">I", data[4:8])[0] == len(data)
    pos, seen = 8, []
    while pos < len(data):
        ostype, length = data[pos : pos + 4], struct.unpack(">I", data[pos + 4 : pos + 8])[0]
        seen.append((ostype, png_size(data[pos + 8 : pos + length])[0]))
        pos += length
    assert seen == list(ICNS_TYPES)
    assert max(size for _, size in seen) == 1024
