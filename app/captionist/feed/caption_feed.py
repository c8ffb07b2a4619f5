"""The desktop app's caption feed: the hub, the web server and the captions text file, kept as the
settings say and fed from the session controller.

Usage::

    feed = CaptionFeed(settings)                  # Settings (feed, overlay and alerts read live)
    feed.attach(controller)                       # sessions and captions go to the hub
    feed.apply()                                  # after the feed settings changed: start/stop/move
    feed.serve(BindAddress("0.0.0.0", 0), token)   # or an explicit address (``captionist live --serve``)
    feed.url, feed.error                          # what the UI shows ("" / None when off or working)
    feed.publish_alert(hit)                       # a KeywordHit (KeywordAlerts.hit)
    feed.shutdown()                               # at exit

Off by default; the text file is a setting of its own (it needs no server). On this machine
(``127.0.0.1``) no token is needed; ``FeedSettings.lan`` binds all addresses and requires the
token, which is generated (and saved) the first time it is needed and kept, so a URL pasted into
OBS stays valid; ``new_token`` replaces it. A port that is taken or a write that fails is reported
through ``error``/``changed``; the app goes on without the feed.
GUI thread only (the server and the captions file run on threads of their own).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Signal, Slot

from captionist import paths
from captionist.feed.access import DEFAULT_HOST, BindAddress, new_token
from captionist.feed.hub import CaptionHub
from captionist.feed.server import FeedError, FeedServer
from captionist.feed.text_file import CaptionTextFile
from captionist.pipeline.events import CaptionUpdate
from captionist.pipeline.signals import emit
from captionist.settings import Settings

SHUTDOWN_WAIT_S = 1.0  # at exit, for the captions file's last write (a dead disk is not waited for)
LAN_HOST = "0.0.0.0"  # noqa: S104 - the user's explicit choice, and the token is then required


def page_style(settings: Settings) -> dict[str, Any]:
    """The overlay's look (and the keyword highlight) as the caption page's style."""
    o = settings.overlay
    return {
        "lines": o.lines,
        "font_family": o.font_family,
        "font_size": o.font_size,
        "text_color": o.text_color,
        "newest_color": o.newest_color,
        "background_color": o.background_color,
        "background_opacity": o.background_opacity,
        "outline": o.outline,
        "shadow": o.shadow,
        "alert_color": settings.alerts.color,
    }


class CaptionFeed(QObject):
    changed = Signal()  # url or error changed
    settings_changed = Signal()  # a token was generated: save the settings
    _text_file_changed = Signal()  # from the captions file's thread: it failed or works again

    def __init__(self, settings: Settings, hub: CaptionHub | None = None) -> None:
        super().__init__()
        self.settings = settings
        self.hub = hub or CaptionHub()
        self.server: FeedServer | None = None
        self.text_file: CaptionTextFile | None = None
        self.server_error: str | None = None
        self._text_file_changed.connect(self._on_text_file_changed)  # queued onto this thread
        self.restyle()

    @property
    def error(self) -> str | None:
        """Why the server or the captions file does not work (None: all is well)."""
        return self.server_error or (self.text_file.error if self.text_file is not None else None)

    @property
    def url(self) -> str:
        return self.server.url if self.server is not None else ""

    @property
    def text_file_path(self) -> Path:
        f = self.settings.feed
        return Path(f.text_file_path).expanduser() if f.text_file_path else paths.default_captions_file()

    def attach(self, controller: Any) -> None:
        controller.session_started.connect(self.on_session_started)
        controller.caption.connect(self.on_caption)
        controller.session_finished.connect(self.on_session_finished)

    # --- settings -----------------------------------------------------------------------------
    def apply(self) -> None:
        """Bring the server and the text file in line with ``settings.feed`` (and restyle)."""
        f = self.settings.feed
        self.restyle()
        bind, token = None, None
        if f.enabled:
            if f.lan and not f.token:
                f.token = new_token()
                emit(self.settings_changed)
            bind = BindAddress(LAN_HOST if f.lan else DEFAULT_HOST, f.port)
            token = f.token if f.lan else None
        self.serve(bind, token)
        self.apply_text_file()
        emit(self.changed)

    def serve(self, bind: BindAddress | None, token: str | None = None) -> None:
        """Serve on ``bind`` (None: stop serving); a failure is kept in ``error``. A server already
        on that address with that token is left as it is (its readers stay connected)."""
        wanted = None if bind is None else (bind.host, bind.port, token)
        server = self.server
        serving = None if server is None else (server.bind.host, server.bind.port, server.token)
        if wanted == serving:  # (a server that failed to start is tried again)
            return
        self._stop_server()
        self.server_error = None
        if bind is None:
            return
        server = FeedServer(self.hub, bind, token, self._page_options)
        try:
            server.start()
        except FeedError as exc:
            self.server_error = str(exc)
        else:
            self.server = server

    def restyle(self) -> None:
        """Send the overlay's current look to the caption pages (nothing if it did not change)."""
        self.hub.set_style(page_style(self.settings))

    def new_token(self) -> None:
        """Replace the access token (links with the old one stop working)."""
        self.settings.feed.token = new_token()
        emit(self.settings_changed)
        self.apply()

    def apply_text_file(self) -> None:
        """Keep (or stop keeping) the captions text file as ``settings.feed`` says."""
        if not self.settings.feed.text_file:
            self._close_text_file()
            return
        if self.text_file is None or self.text_file.path != self.text_file_path:
            self._close_text_file()
            self.text_file = CaptionTextFile(self.text_file_path, lambda: emit(self._text_file_changed))
            self._write_text_file()

    def _write_text_file(self) -> None:
        if self.text_file is not None:
            lines = self.hub.current_lines(self.settings.overlay.lines, self.settings.feed.width)
            self.text_file.update(lines)

    def _close_text_file(self) -> None:
        if self.text_file is not None:
            self.text_file.close()
        self.text_file = None

    @Slot()
    def _on_text_file_changed(self) -> None:
        emit(self.changed)

    def _page_options(self) -> dict[str, Any]:
        return {"style": self.hub.style()}

    def _stop_server(self) -> None:
        if self.server is not None:
            self.server.stop()
        self.server = None

    def shutdown(self, wait_s: float = SHUTDOWN_WAIT_S) -> None:
        """Stop serving; give the captions file up to ``wait_s`` to take the last lines."""
        self._stop_server()
        if self.text_file is not None:
            self.text_file.wait(wait_s)
        self._close_text_file()

    # --- sessions -----------------------------------------------------------------------------
    @Slot(object)
    def on_session_started(self, config: Any) -> None:
        self.hub.begin_session(
            {
                "model": Path(config.model_path).name,
                "sources": [getattr(s, "name", str(s)) for s in config.sources],
                "latency_ms": config.latency_ms,
                "language": config.language,
            }
        )
        self._write_text_file()

    @Slot(object)
    def on_caption(self, update: CaptionUpdate) -> None:
        self.hub.publish(update)
        self._write_text_file()

    @Slot(object)
    def on_session_finished(self, result: Any) -> None:
        summary = getattr(result, "summary", None)
        self.hub.end_session(
            {"audio_ms": getattr(summary, "audio_ms", 0), "error": getattr(summary, "error", None)}
        )

    def publish_alert(self, hit: Any) -> None:
        self.hub.publish_alert(hit.feed_data())
