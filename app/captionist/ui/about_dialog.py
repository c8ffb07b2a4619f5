""" "About Captionist": version, the model in use, the engine build, the licence and where files live.

Usage::

    text = about_text(AboutFacts.gather(settings, window.model_info, devices=list_devices))
    dialog = AboutDialog(facts, open_help=window.open_help)   # non-modal; Close and Help buttons

``AboutFacts`` is plain data so the text is tested without Qt; gathering never raises (an engine
that cannot list its devices says so). GUI thread only.
"""

from __future__ import annotations

import html
import importlib.metadata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QVBoxLayout, QWidget

from captionist import paths
from captionist._version import __version__
from captionist.models.info import ModelInfo
from captionist.settings import Settings

DEFAULT_LICENCE = "Apache-2.0"
GGML_DISTRIBUTION = "libggml-python"  # the ggml build the engine links


@dataclass(frozen=True)
class AboutFacts:
    version: str
    model: str  # "Voxtral Mini · Voxtral Realtime on Vulkan0", or why there is none
    engine: str  # "ggml 0.20.2.post1 (libggml-python); devices: CPU, Vulkan0 — …"
    licence: str
    settings_file: str
    transcripts_dir: str
    models_dir: str

    @classmethod
    def gather(
        cls,
        settings: Settings,
        model: ModelInfo | None,
        devices: Callable[[], Sequence[Any]] | None = None,
        *,
        distribution_version: Callable[[str], str] = importlib.metadata.version,
        licence: str | None = None,
    ) -> AboutFacts:
        return cls(
            version=__version__,
            model=f"{model.label} on {model.backend}" if model is not None else "none loaded",
            engine=_engine_line(devices, distribution_version),
            licence=licence or _licence(),
            settings_file=str(paths.settings_file()),
            transcripts_dir=str(settings.transcript_folder()),
            models_dir=str(paths.models_dir()),
        )


def _engine_line(devices: Callable[[], Sequence[Any]] | None, version: Callable[[str], str]) -> str:
    try:
        ggml = f"ggml {version(GGML_DISTRIBUTION)} ({GGML_DISTRIBUTION})"
    except importlib.metadata.PackageNotFoundError:
        ggml = "ggml (version unknown)"
    if devices is None:
        return ggml
    try:
        labels = [str(d.label) for d in devices()]
    except Exception as exc:  # an engine that cannot start must not keep About shut
        return f"{ggml}; devices unavailable ({exc})"
    return f"{ggml}; devices: {', '.join(labels) or 'none'}"


def _licence() -> str:
    try:
        metadata = importlib.metadata.metadata("captionist")
    except importlib.metadata.PackageNotFoundError:
        return DEFAULT_LICENCE
    return str(metadata.get("License-Expression") or metadata.get("License") or DEFAULT_LICENCE)


def about_rows(facts: AboutFacts) -> list[tuple[str, str]]:
    return [
        ("Version", facts.version),
        ("Model", facts.model),
        ("Engine", facts.engine),
        ("Licence", facts.licence),
        ("Settings", facts.settings_file),
        ("Transcripts", facts.transcripts_dir),
        ("Models", facts.models_dir),
    ]


def about_text(facts: AboutFacts) -> str:
    """The facts as plain text, one per line (what Copy gives and tests read)."""
    return "\n".join(f"{name}: {value}" for name, value in about_rows(facts))


def about_html(facts: AboutFacts) -> str:
    rows = "".join(
        f"<tr><td><b>{html.escape(name)}</b>&nbsp;&nbsp;</td><td>{html.escape(value)}</td></tr>"
        for name, value in about_rows(facts)
    )
    return (
        f"<h3>Captionist {html.escape(facts.version)}</h3>"
        "<p>Live captions from your microphone or computer audio, fully offline.</p>"
        f"<table>{rows}</table>"
    )


class AboutDialog(QDialog):
    def __init__(
        self,
        facts: AboutFacts,
        parent: QWidget | None = None,
        *,
        open_help: Callable[[], object] | None = None,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("About Captionist")
        self.facts = facts
        self.body = QLabel(about_html(facts))
        self.body.setTextFormat(Qt.TextFormat.RichText)
        self.body.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.body.setWordWrap(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.help_button = buttons.addButton("Help", QDialogButtonBox.ButtonRole.HelpRole)
        self.help_button.setEnabled(open_help is not None)
        if open_help is not None:
            self.help_button.clicked.connect(lambda: open_help())
        buttons.rejected.connect(self.close)
        layout = QVBoxLayout(self)
        layout.addWidget(self.body)
        layout.addWidget(buttons)

    def set_facts(self, facts: AboutFacts) -> None:
        self.facts = facts
        self.body.setText(about_html(facts))

    def text(self) -> str:
        return about_text(self.facts)
