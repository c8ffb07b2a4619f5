"""Level meters while no session runs: a capture opened only to measure the selected sources.

Usage::

    preview = LevelPreview(lambda sources: Capture(sources, sd=sd, cancel_echo=False))
    preview.start(panel.selected())   # reopens for a new selection; errors are returned, not raised
    levels = preview.poll()           # GUI timer: drain the audio, return {source id: dBFS}
    preview.stop()                    # before a session opens the same devices

Audio read here is thrown away; the session opens its own capture.
"""

from __future__ import annotations

from collections.abc import Callable

from captionist.audio.capture import Capture, CaptureError
from captionist.audio.devices import Source


class LevelPreview:
    def __init__(self, factory: Callable[[list[Source]], Capture]) -> None:
        self._factory = factory
        self._capture: Capture | None = None

    @property
    def active(self) -> bool:
        return self._capture is not None

    def start(self, sources: list[Source]) -> str | None:
        """Open ``sources`` for metering; returns an error message instead of raising."""
        self.stop()
        if not sources:
            return None
        try:
            capture = self._factory(sources)
            capture.start()
        except (CaptureError, OSError, ValueError) as exc:
            return str(exc)
        self._capture = capture
        return None

    def poll(self) -> dict[str, float]:
        if self._capture is None:
            return {}
        while self._capture.read(0) is not None:
            pass
        return self._capture.levels()

    def stop(self) -> None:
        if self._capture is not None:
            self._capture.stop()
            self._capture = None
