"""A text file that always holds the current caption lines, for OBS "Text (read from file)" sources.

Usage::

    file = CaptionTextFile(Path("~/captions.txt").expanduser(), lines=2, width=42)
    file.update(hub.current_lines(2, 42))   # rewrites the file when the lines changed
    file.error                               # why the last write failed (None: it worked)

Each write replaces the file whole (a temporary file beside it, then an atomic rename), so a reader
never sees half a caption. It is not synced to disk: the file is a view, not the transcript. A write
that fails (a full disk, a folder that went away, Windows refusing the rename while a reader holds
the file) is not raised: ``error`` says why, ``failed`` fires once per run of failures, and the next
change tries again.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from captionist.atomic_file import replace_file


class CaptionTextFile:
    def __init__(self, path: Path, on_error: Callable[[str], None] | None = None) -> None:
        self.path = path
        self.error: str | None = None
        self._on_error = on_error
        self._written: str | None = None

    def update(self, lines: list[str]) -> bool:
        """Write ``lines`` if they differ from what the file holds; True if the file is up to date."""
        text = "\n".join(lines) + ("\n" if lines else "")
        if text == self._written:
            return True
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            replace_file(self.path, text, durable=False)
        except OSError as exc:
            first = self.error is None
            self.error = f"cannot write the captions file {self.path}: {exc.strerror or exc}"
            if first and self._on_error is not None:
                self._on_error(self.error)
            return False
        self._written, self.error = text, None
        return True
