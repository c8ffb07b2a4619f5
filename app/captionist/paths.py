"""Where Captionist keeps its files.

Usage::

    from captionist import paths
    paths.settings_file()          # <config dir>/settings.json
    paths.models_dir()             # <data dir>/models
    paths.default_transcript_dir() # ~/Documents/Captionist
    paths.session_journals_dir()   # <data dir>/sessions (journals kept for export, not beside transcripts)
    paths.repack_cache_dir()       # <cache dir>/repacked (weights re-laid out for this CPU)
    paths.instance_name()          # the single-instance socket name (per user and config dir)

Every location comes from platformdirs. ``CAPTIONIST_HOME`` (an absolute folder) overrides the
config, data and cache dirs, which tests and portable installs use; it is read on every call.
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

APP_NAME = "Captionist"
HOME_ENV = "CAPTIONIST_HOME"


def _home_override() -> Path | None:
    value = os.environ.get(HOME_ENV)
    return Path(value) if value else None


def config_dir() -> Path:
    """Folder for settings (created on demand by writers, not here)."""
    home = _home_override()
    return home / "config" if home else Path(platformdirs.user_config_dir(APP_NAME, appauthor=False))


def data_dir() -> Path:
    """Folder for downloaded and converted models."""
    home = _home_override()
    return home / "data" if home else Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))


def backend_guard_dir() -> Path:
    """Where ``backend_guard`` notes the GPU drivers it is starting and the ones that crashed."""
    return data_dir() / "backend-guard"


def cache_dir() -> Path:
    """Folder for files Captionist can make again (deleting it loses nothing)."""
    home = _home_override()
    return home / "cache" if home else Path(platformdirs.user_cache_dir(APP_NAME, appauthor=False))


def repack_cache_dir() -> Path:
    """Where the engine keeps the CPU's re-laid-out copy of a model's Q4_0/Q4_K/IQ4_NL matrices
    (``engine.Model(repack_cache=...)``), so that the model opens in a fraction of a second after
    its first load on this computer."""
    return cache_dir() / "repacked"


def settings_file() -> Path:
    return config_dir() / "settings.json"


def models_dir() -> Path:
    return data_dir() / "models"


def download_cache_dir() -> Path:
    """Where checkpoint downloads land before conversion (kept for resume)."""
    return data_dir() / "downloads"


def session_journals_dir() -> Path:
    """Where the journals of finished sessions are kept when only they can export the transcript
    to another format (Markdown, untimed text); see ``captionist.transcript.archive``."""
    return data_dir() / "sessions"


def default_transcript_dir() -> Path:
    """A ``Captionist`` folder in the user's documents directory."""
    home = _home_override()
    if home:
        return home / "transcripts"
    return Path(platformdirs.user_documents_dir()) / APP_NAME


def default_captions_file() -> Path:
    """The text file of the current caption lines for OBS text sources (beside the transcripts)."""
    return default_transcript_dir() / "captions.txt"


def bundled_demo_model() -> Path:
    """Location of the small demo model shipped inside the package (may not exist)."""
    return Path(__file__).resolve().parent / "models_data" / "demo.gguf"


def instance_name() -> str:
    """The local socket name that makes the desktop app single-instance: one per user and
    settings folder (so a portable install or a test with its own ``CAPTIONIST_HOME`` is apart)."""
    import getpass
    import hashlib

    try:
        user = getpass.getuser()
    except (OSError, KeyError):  # no user name in the environment or the password database
        user = str(Path.home())
    digest = hashlib.sha256(f"{user}\n{config_dir()}".encode()).hexdigest()[:16]
    return f"captionist-{digest}"
