"""Render the app icon from its one source, ``resources/captionist.svg``, at every size installers need.

Usage::

    python packaging/make_icons.py resources/captionist.svg build/packaging/icons

writes ``png/captionist-<N>.png`` for N in ``PNG_SIZES``, ``captionist.ico`` (Windows: 16..256) and
``captionist.icns`` (macOS: 16..1024 with the @2x variants). Both containers hold PNG images, which
Windows (since Vista) and macOS (since 10.7) read; they are written here by hand so that building
needs only PySide6 (QSvgRenderer), not Pillow or Apple's iconutil. Outputs are build products: they
live under ``build/`` and are not committed.
"""

from __future__ import annotations

import argparse
import os
import struct
import sys
from pathlib import Path

PNG_SIZES: tuple[int, ...] = (16, 24, 32, 48, 64, 128, 256, 512, 1024)
ICO_SIZES: tuple[int, ...] = (16, 24, 32, 48, 64, 128, 256)
# ICNS element types that hold a PNG, with the pixel size each one stores (Apple's "Icon Services").
ICNS_TYPES: tuple[tuple[bytes, int], ...] = (
    (b"icp4", 16),
    (b"ic11", 32),  # 16@2x
    (b"icp5", 32),
    (b"ic12", 64),  # 32@2x
    (b"ic07", 128),
    (b"ic13", 256),  # 128@2x
    (b"ic08", 256),
    (b"ic14", 512),  # 256@2x
    (b"ic09", 512),
    (b"ic10", 1024),  # 512@2x
)


def render_pngs(svg: Path, sizes: tuple[int, ...]) -> dict[int, bytes]:
    """PNG bytes of ``svg`` rendered square at each size (transparent background, antialiased)."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QBuffer, QByteArray, QIODevice, Qt
    from PySide6.QtGui import QGuiApplication, QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    app = QGuiApplication.instance() or QGuiApplication([sys.argv[0]])
    renderer = QSvgRenderer(str(svg))
    if not renderer.isValid():
        raise ValueError(f"{svg} is not an SVG image Qt can render")
    pngs: dict[int, bytes] = {}
    for size in sizes:
        image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
        image.fill(Qt.GlobalColor.transparent)
        painter = QPainter(image)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform)
        renderer.render(painter)
        painter.end()
        data = QByteArray()
        buffer = QBuffer(data)
        buffer.open(QIODevice.OpenModeFlag.WriteOnly)
        if not image.save(buffer, "PNG"):
            raise RuntimeError(f"could not encode the {size}px icon as PNG")
        buffer.close()
        pngs[size] = bytes(data.data())
    del app
    return pngs


def ico_bytes(pngs: dict[int, bytes]) -> bytes:
    """A Windows .ico holding the PNG of each of ``ICO_SIZES`` (ICONDIR, ICONDIRENTRY[], images)."""
    sizes = list(ICO_SIZES)
    header = struct.pack("<HHH", 0, 1, len(sizes))  # reserved, type 1 = icon, count
    offset = len(header) + 16 * len(sizes)
    entries, images = b"", b""
    for size in sizes:
        png = pngs[size]
        dim = 0 if size >= 256 else size  # 0 means 256
        entries += struct.pack("<BBBBHHII", dim, dim, 0, 0, 1, 32, len(png), offset)
        images += png
        offset += len(png)
    return header + entries + images


def icns_bytes(pngs: dict[int, bytes]) -> bytes:
    """A macOS .icns: the 'icns' header, then one (type, length, PNG) element per entry."""
    body = b""
    for ostype, size in ICNS_TYPES:
        png = pngs[size]
        body += ostype + struct.pack(">I", 8 + len(png)) + png
    return b"icns" + struct.pack(">I", 8 + len(body)) + body


def make_icons(svg: Path, out: Path) -> list[Path]:
    """Write the PNGs, the .ico and the .icns under ``out``; returns the files written."""
    pngs = render_pngs(svg, PNG_SIZES)
    (out / "png").mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for size, png in pngs.items():
        path = out / "png" / f"captionist-{size}.png"
        path.write_bytes(png)
        written.append(path)
    for name, data in (("captionist.ico", ico_bytes(pngs)), ("captionist.icns", icns_bytes(pngs))):
        (out / name).write_bytes(data)
        written.append(out / name)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("svg", type=Path, help="the icon's SVG source")
    parser.add_argument("out", type=Path, help="output folder")
    args = parser.parse_args(argv)
    written = make_icons(args.svg, args.out)
    print(f"make_icons: {len(written)} files in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
