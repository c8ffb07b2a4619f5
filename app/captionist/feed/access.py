"""Who may read the caption feed: where it listens, the access token, and which requests pass.

Usage::

    bind = parse_bind("8791")              # BindAddress("127.0.0.1", 8791); "0.0.0.0:8791", "[::1]:0"
    policy = AccessPolicy(bind, token=new_token() if not bind.loopback else None)
    policy.check(headers, query)           # None if allowed, else why not (-> 403)

Rules. On a loopback address (the default) no token is needed, but the request's ``Host`` must
name the loopback (``127.0.0.1``, ``localhost``, ``[::1]``), so a web page cannot reach the feed
through DNS rebinding; and a WebSocket opened from a web page (an ``Origin`` header) must come from
the feed's own pages, so another site open in the browser cannot read the captions. Bound to any
other address (the local network: an explicit choice), every request must carry the token, as
``?token=`` or ``Authorization: Bearer``. Tokens are compared in constant time.
"""

from __future__ import annotations

import hmac
import ipaddress
import re
import secrets
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8791
LOOPBACK_NAMES = ("localhost",)


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or ``localhost``) is this machine only."""
    host = host.strip("[]").lower()
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class BindAddress:
    host: str
    port: int

    @property
    def loopback(self) -> bool:
        return is_loopback(self.host)

    def url_host(self) -> str:
        """The host as a URL writes it (IPv6 in brackets)."""
        return f"[{self.host}]" if ":" in self.host else self.host


_BIND = re.compile(r"^(?:(?P<host>\[[0-9A-Fa-f:.]+\]|[^:\[\]]+):)?(?P<port>\d{1,5})$")


def parse_bind(text: str, default_host: str = DEFAULT_HOST) -> BindAddress:
    """``[HOST:]PORT`` (port 0: any free one); a ``ValueError`` saying what is wrong otherwise."""
    m = _BIND.match(text.strip())
    if m is None:
        raise ValueError(f"--serve takes [HOST:]PORT (for example 8791 or 0.0.0.0:8791); got {text!r}")
    port = int(m["port"])
    if port > 65535:
        raise ValueError(f"port must be 0-65535; got {port}")
    host = (m["host"] or default_host).strip("[]")
    if not host:
        raise ValueError(f"no host in {text!r}")
    return BindAddress(host, port)


def lan_address() -> str | None:
    """This machine's address on its local network (the one its default route uses), or None."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("192.0.2.1", 9))  # TEST-NET-1: no packet is sent, this only picks a route
            address = probe.getsockname()[0]
    except OSError:
        return None
    return None if address.startswith(("127.", "0.")) else address


def shown_host(host: str) -> str:
    """The host to put in a URL for the feed bound to ``host``: for all addresses (``0.0.0.0``,
    ``::``) the machine's network address, so the URL works from other devices."""
    if host in ("0.0.0.0", "::", ""):  # noqa: S104 - naming them, not binding
        return lan_address() or socket.gethostname()
    return host


def new_token() -> str:
    """A fresh access token (128 random bits, URL-safe)."""
    return secrets.token_urlsafe(16)


def _host_name(host_header: str) -> str:
    """The name part of a ``Host`` header (``[::1]:8791`` -> ``::1``, ``localhost:80`` -> ``localhost``)."""
    host_header = host_header.strip()
    if host_header.startswith("["):
        return host_header[1 : host_header.find("]")] if "]" in host_header else ""
    return host_header.rsplit(":", 1)[0] if host_header.count(":") == 1 else host_header


@dataclass(frozen=True)
class AccessPolicy:
    bind: BindAddress
    token: str | None = None  # required on every request when set

    def __post_init__(self) -> None:
        if not self.bind.loopback and not self.token:
            raise ValueError("serving captions beyond this machine needs an access token")

    def presented_token(self, headers: Mapping[str, str], query: Mapping[str, str]) -> str | None:
        auth = headers.get("Authorization", "")
        if auth.lower().startswith("bearer "):
            return auth[7:].strip()
        return query.get("token")

    def check(
        self, headers: Mapping[str, str], query: Mapping[str, str], websocket: bool = False
    ) -> str | None:
        """None if the request may read the feed, else the reason it may not."""
        if self.token:
            given = self.presented_token(headers, query) or ""
            if not hmac.compare_digest(given.encode(), self.token.encode()):
                return "an access token is required (add ?token=... as shown in Captionist)"
            return None
        if not is_loopback(_host_name(headers.get("Host", ""))):
            return "the caption feed answers only to 127.0.0.1 or localhost"
        origin = headers.get("Origin")
        if websocket and origin is not None:
            parts = urlsplit(origin)
            if parts.scheme not in ("http", "https") or not is_loopback(parts.hostname or ""):
                return "WebSocket connections from other web sites are refused"
            if parts.port is not None and parts.port != self.bind.port and self.bind.port != 0:
                return "WebSocket connections from other web sites are refused"
        return None
