"""Where the feed listens and who may read it."""

from __future__ import annotations

import socket

import pytest

from captionist.feed.access import (
    DEFAULT_HOST,
    AccessPolicy,
    BindAddress,
    is_loopback,
    lan_address,
    parse_bind,
    shown_host,
)


@pytest.mark.parametrize(
    ("text", "host", "port"),
    [("8791", DEFAULT_HOST, 8791), ("0", DEFAULT_HOST, 0), ("0.0.0.0:8791", "0.0.0.0", 8791),
     ("localhost:9000", "localhost", 9000), ("[::1]:0", "::1", 0), ("192.168.1.20:80", "192.168.1.20", 80)],
)  # fmt: skip
def test_bind_addresses_parse(text: str, host: str, port: int) -> None:
    assert parse_bind(text) == BindAddress(host, port)


@pytest.mark.parametrize("text", ["", "http://x:1", "host:", ":80", "70000", "a:b", "1.2.3.4:99999", "[::1]"])
def test_bad_bind_addresses_say_what_is_wrong(text: str) -> None:
    with pytest.raises(ValueError, match="HOST:|port"):
        parse_bind(text)


def test_loopback_is_this_machine_only() -> None:
    assert all(is_loopback(h) for h in ("127.0.0.1", "127.3.4.5", "::1", "[::1]", "localhost", "LOCALHOST"))
    assert not any(
        is_loopback(h) for h in ("0.0.0.0", "192.168.1.2", "::", "evil.com", "localhost.evil.com", "")
    )


def test_beyond_this_machine_a_token_is_required() -> None:
    with pytest.raises(ValueError, match="token"):
        AccessPolicy(BindAddress("0.0.0.0", 8791))
    policy = AccessPolicy(BindAddress("0.0.0.0", 8791), token="s3cret")
    host = {"Host": "192.168.1.2:8791"}
    assert policy.check(host, {}) is not None
    assert policy.check(host, {"token": "wrong"}) is not None
    assert policy.check(host, {"token": "s3cret"}) is None
    assert policy.check({**host, "Authorization": "Bearer s3cret"}, {}) is None
    assert policy.check({**host, "Authorization": "Bearer nope"}, {"token": "s3cret"}) is not None


def test_on_loopback_the_host_must_be_loopback_and_websockets_must_come_from_the_feeds_pages() -> None:
    policy = AccessPolicy(BindAddress("127.0.0.1", 8791))
    for host in ("127.0.0.1:8791", "localhost:8791", "[::1]:8791", "localhost"):
        assert policy.check({"Host": host}, {}) is None, host
    for host in ("evil.com:8791", "192.168.1.2:8791", ""):  # DNS rebinding, or no Host at all
        assert policy.check({"Host": host}, {}) is not None, host
    ok = {"Host": "127.0.0.1:8791"}
    assert policy.check(ok, {}, websocket=True) is None  # a local app: no Origin
    assert policy.check({**ok, "Origin": "http://127.0.0.1:8791"}, {}, websocket=True) is None
    assert policy.check({**ok, "Origin": "http://localhost:8791"}, {}, websocket=True) is None
    for origin in ("https://evil.com", "http://127.0.0.1:3000", "null", "file://"):
        assert policy.check({**ok, "Origin": origin}, {}, websocket=True) is not None, origin
    assert policy.check({**ok, "Origin": "https://evil.com"}, {}) is None  # plain GETs: the browser's CORS


def test_the_url_for_all_addresses_names_this_machine() -> None:
    assert shown_host("127.0.0.1") == "127.0.0.1" and shown_host("192.168.1.20") == "192.168.1.20"
    for everywhere in ("0.0.0.0", "::"):
        shown = shown_host(everywhere)
        assert shown and shown not in ("0.0.0.0", "::")
        assert shown in (lan_address(), socket.gethostname())
