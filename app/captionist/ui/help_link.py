"""Where "Help" goes: the project page when the package declares one, else a local copy of the README.

Usage::

    url = help_url()                         # QUrl (https://... or file:///...), None when none is found
    open_help(open_url=QDesktopServices.openUrl)   # opens it; returns the QUrl opened, or None

The project page is the package metadata's ``Project-URL`` (``[project.urls]`` in pyproject.toml),
preferring Documentation, then Homepage. Without one, the README is opened from a source checkout,
else the copy the installed metadata carries (its long description) is written to
``<data dir>/help/README.md`` and opened from there, so Help works offline.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable
from email.message import Message
from pathlib import Path

from PySide6.QtCore import QUrl

from captionist import paths

DISTRIBUTION = "captionist"
PREFERRED_LABELS = ("documentation", "docs", "homepage", "home", "source", "repository")
CHECKOUT_README = Path(__file__).resolve().parents[3] / "README.md"  # <checkout>/app/captionist/ui
BUNDLED_README = Path(__file__).resolve().parents[1] / "help" / "README.md"  # the installers' copy (.spec)


def package_metadata() -> Message | None:
    try:
        return importlib.metadata.metadata(DISTRIBUTION)  # type: ignore[return-value]
    except importlib.metadata.PackageNotFoundError:
        return None


def project_url(metadata: Message | None) -> str | None:
    """The best ``Project-URL`` of ``metadata`` ("Label, https://..."), None when it has none."""
    entries = []
    for entry in (metadata.get_all("Project-URL") or []) if metadata is not None else []:
        label, _, url = str(entry).partition(",")
        if url.strip().startswith(("https://", "http://")):
            entries.append((label.strip().lower(), url.strip()))
    for wanted in PREFERRED_LABELS:
        for label, url in entries:
            if label == wanted:
                return url
    return entries[0][1] if entries else None


def local_readme(
    metadata: Message | None, checkout_readme: Path = CHECKOUT_README, bundled_readme: Path = BUNDLED_README
) -> Path | None:
    """The checkout's README, else the installer bundle's, else the metadata's description written
    under the data dir."""
    for readme in (checkout_readme, bundled_readme):
        if readme.is_file():
            return readme
    text = (metadata.get_payload() or metadata.get("Description") or "") if metadata is not None else ""
    if not isinstance(text, str) or not text.strip():
        return None
    copy = paths.data_dir() / "help" / "README.md"
    try:
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_text(text, encoding="utf-8")
    except OSError:
        return None
    return copy


def help_url(
    read_metadata: Callable[[], Message | None] = package_metadata,
    checkout_readme: Path = CHECKOUT_README,
    bundled_readme: Path = BUNDLED_README,
) -> QUrl | None:
    metadata = read_metadata()
    url = project_url(metadata)
    if url:
        return QUrl(url)
    readme = local_readme(metadata, checkout_readme, bundled_readme)
    return QUrl.fromLocalFile(str(readme)) if readme else None


def open_help(open_url: Callable[[QUrl], bool], url: QUrl | None = None) -> QUrl | None:
    """Open ``url`` (default: ``help_url()``) with ``open_url``; the QUrl opened, None when there was
    nothing to open or the desktop could not open it."""
    url = url or help_url()
    if url is None or not open_url(url):
        return None
    return url
