"""The feed's web server: every committed token exactly once and in order, resumption without
duplicates, many readers, binding and tokens, the plain-text lines and the page."""

from __future__ import annotations

import asyncio
import socket
import threading
import time

import aiohttp
import pytest

from captionist.feed.access import BindAddress
from captionist.feed.hub import CaptionHub
from captionist.feed.server import FeedError, FeedServer, parse_after
from tests.fakes.caption_updates import UpdateMaker

from .feed_client import Received, has_index, read_sse, read_ws, run

N_WORDS = 400


@pytest.fixture
def served():
    hub = CaptionHub()
    server = FeedServer(hub, BindAddress("127.0.0.1", 0), page_options=lambda: {"style": {"lines": 3}})
    server.start()
    yield hub, server
    server.stop()


def publish_words(
    hub: CaptionHub, n: int, pause_s: float = 0.0, start: threading.Event | None = None
) -> threading.Thread:
    """A thread that publishes a session of ``n`` words (an utterance end every 7) as the GUI would."""

    def run_session() -> None:
        if start is not None:
            start.wait(10)
        u = UpdateMaker()
        hub.begin_session({"model": "test"})
        for i in range(0, n, 2):
            pieces = [f" w{k}" for k in range(i, min(n, i + 2))]
            hub.publish(u.make(pieces, ends=[len(pieces)] if i % 7 == 0 else []))
            if pause_s:
                time.sleep(pause_s)
        hub.end_session({})

    thread = threading.Thread(target=run_session)
    thread.start()
    return thread


def assert_exactly_once(got: Received, n: int = N_WORDS) -> None:
    assert got.indices() == list(range(n))
    assert [t["text"] for t in got.tokens()] == [f" w{k}" for k in range(n)]
    seqs = [m["seq"] for m in got.messages if "seq" in m and m["type"] != "hello"]
    assert seqs == sorted(set(seqs))


def test_sse_delivers_every_token_once_in_order_while_the_session_runs(served) -> None:
    hub, server = served
    go = threading.Event()
    thread = publish_words(hub, N_WORDS, pause_s=0.001, start=go)

    async def read(session: aiohttp.ClientSession) -> Received:
        task = asyncio.ensure_future(read_sse(session, server.url + "events?after=0", has_index(N_WORDS - 1)))
        await asyncio.sleep(0.2)
        go.set()
        return await task

    got = run(read)
    thread.join()
    assert got.messages[0]["type"] == "hello" and got.messages[0]["epoch"] == hub.epoch
    assert_exactly_once(got)


def test_reconnecting_with_last_event_id_resumes_without_duplicates_or_gaps(served) -> None:
    hub, server = served
    thread = publish_words(hub, N_WORDS, pause_s=0.002)

    def few_or_stop(r: Received) -> bool:
        return len(r.messages) >= 6 or r.messages[-1]["type"] == "session_stop"

    async def read(session: aiohttp.ClientSession) -> list[Received]:
        parts, last = [], "0"
        for _ in range(200):  # break the connection every few events until the session is over
            got = await read_sse(session, server.url + "events", few_or_stop, headers={"Last-Event-ID": last},
                                 timeout_s=5)  # fmt: skip
            parts.append(got)
            last = got.last_id or last
            assert not any(m["type"] == "reset" for m in got.messages)
            if any(m["type"] == "session_stop" for m in got.messages):
                break
        return parts

    parts = run(read)
    thread.join()
    joined = Received([m for p in parts for m in p.messages if m["type"] != "hello"])
    assert len(parts) > 5
    assert_exactly_once(joined)


def test_websocket_delivers_and_resumes_with_after(served) -> None:
    hub, server = served
    thread = publish_words(hub, N_WORDS)
    thread.join()
    ws_url = server.url.replace("http://", "ws://") + "ws"

    async def read(session: aiohttp.ClientSession) -> tuple[Received, Received]:
        first = await read_ws(session, ws_url + "?after=0", has_index(150))
        seq = max(m["seq"] for m in first.messages if m["type"] == "tokens")
        rest = await read_ws(session, f"{ws_url}?after={hub.epoch}.{seq}", has_index(N_WORDS - 1))
        return first, rest

    first, rest = run(read)
    upto = [m for m in first.messages if m["type"] != "hello"]
    cut = max(i for i, m in enumerate(upto) if m["type"] == "tokens")
    assert_exactly_once(Received(upto[: cut + 1] + rest.messages[1:]))


def test_a_reader_from_another_run_is_reset_then_starts_afresh(served) -> None:
    hub, server = served
    publish_words(hub, 40).join()

    async def read(session: aiohttp.ClientSession) -> Received:
        return await read_sse(
            session, server.url + "events", has_index(39), headers={"Last-Event-ID": "deadbeef.12"}
        )

    got = run(read)
    assert [m["type"] for m in got.messages[:3]] == ["hello", "reset", "session_start"]
    assert (
        parse_after("deadbeef.12", hub.epoch) == -1
        and parse_after(None, hub.epoch) is None
        and parse_after(f"{hub.epoch}.12", hub.epoch) == 12
    )


def test_fifty_clients_each_get_every_token(served) -> None:
    hub, server = served
    go = threading.Event()
    thread = publish_words(hub, N_WORDS, pause_s=0.001, start=go)
    ws_url = server.url.replace("http://", "ws://") + "ws?after=0"

    async def read(session: aiohttp.ClientSession) -> list[Received]:
        tasks = [
            asyncio.ensure_future(
                read_sse(session, server.url + "events?after=0", has_index(N_WORDS - 1), timeout_s=60)
                if k % 2
                else read_ws(session, ws_url, has_index(N_WORDS - 1), timeout_s=60)  # fmt: skip
            )
            for k in range(50)
        ]
        while server.clients < 50:
            await asyncio.sleep(0.05)
        go.set()
        return list(await asyncio.gather(*tasks))

    async def main() -> list[Received]:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
            return await read(session)

    results = asyncio.run(main())
    thread.join()
    for got in results:
        assert_exactly_once(got)


def test_stop_ends_open_streams(served) -> None:
    hub, server = served
    hub.begin_session({})

    async def read(session: aiohttp.ClientSession) -> Received:
        return await read_sse(session, server.url + "events", lambda r: False, timeout_s=20)

    result: list[Received] = []
    reader = threading.Thread(target=lambda: result.append(run(read)))  # type: ignore[arg-type]
    reader.start()
    deadline = time.monotonic() + 10
    while server.clients < 1 and time.monotonic() < deadline:
        time.sleep(0.02)
    t0 = time.monotonic()
    server.stop()
    reader.join(15)
    assert not reader.is_alive() and result and time.monotonic() - t0 < 10
    assert server.clients == 0


def test_plain_text_lines(served) -> None:
    hub, server = served
    u = UpdateMaker()
    hub.begin_session({})
    hub.publish(u.make([" hello", " world"], ends=[2]))
    hub.publish(u.make([" one", " two", " three"]))

    async def get(session: aiohttp.ClientSession) -> list[str]:
        out = []
        for query in ("", "?lines=1", "?lines=3&width=9", "?lines=x"):
            async with session.get(server.url + "captions.txt" + query) as resp:
                assert resp.status == 200 and resp.content_type == "text/plain"
                out.append(await resp.text())
        return out

    assert run(get) == ["hello world\none two three\n", "one two three\n", "world\none two\nthree\n",
                        "hello world\none two three\n"]  # fmt: skip


def test_the_page_carries_the_style_and_cannot_be_broken_out_of() -> None:
    hub = CaptionHub()
    style = {"font_family": "</script><script>alert(1)</script>", "lines": 2}
    server = FeedServer(hub, BindAddress("127.0.0.1", 0), page_options=lambda: {"style": style})
    server.start()
    try:

        async def get(session: aiohttp.ClientSession) -> str:
            async with session.get(server.url) as resp:
                assert resp.status == 200 and resp.content_type == "text/html"
                return await resp.text()

        page = run(get)
    finally:
        server.stop()
    assert "\\u003c/script>\\u003cscript>alert(1)\\u003c/script>" in page
    assert page.count("<script>") == 1  # only the page's own


def test_it_listens_on_the_loopback_by_default_and_refuses_other_host_names(served) -> None:
    hub, server = served
    assert server.url.startswith("http://127.0.0.1:") and "token" not in server.url

    async def get(session: aiohttp.ClientSession) -> list[int]:
        evil = {"Host": "attacker.example:80"}
        return [await status(session, server.url + "captions.txt"),
                await status(session, server.url + "captions.txt", evil),
                await status(session, server.url, evil),
                await status(session, server.url + "events", evil),
                await status(session, server.url + "ws", {"Origin": "https://attacker.example"}),
                await status(session, server.url + "ws", {"Origin": server.url.rstrip("/")})]  # fmt: skip

    assert run(get) == [200, 403, 403, 403, 403, 101]
    other = socket.create_connection(("127.0.0.1", server.port))
    other.close()
    local_ip = _non_loopback_ip()
    if local_ip is not None:  # the loopback server is not reachable at the machine's own address
        with pytest.raises(OSError):
            socket.create_connection((local_ip, server.port), timeout=2).close()


def _non_loopback_ip() -> str | None:
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))  # no packet is sent: this only picks the outgoing address
            ip = s.getsockname()[0]
    except OSError:
        return None
    return None if ip.startswith("127.") else ip


async def status(session: aiohttp.ClientSession, url: str, headers: dict | None = None) -> int:
    """The HTTP status of a GET (101 for a WebSocket that opened); streams are closed unread."""
    if "/ws" in url:
        try:
            async with session.ws_connect(url.replace("http://", "ws://"), headers=headers or {}):
                return 101
        except aiohttp.WSServerHandshakeError as exc:
            return exc.status
    async with session.get(url, headers=headers or {}) as resp:
        return resp.status


def test_on_the_network_every_route_needs_the_token() -> None:
    hub = CaptionHub()
    hub.begin_session({})
    server = FeedServer(hub, BindAddress("0.0.0.0", 0), token="tok-123")
    url = server.start()
    try:
        assert url.endswith("/?token=tok-123")
        base = f"http://127.0.0.1:{server.port}/"
        tries = (
            ("", {}),
            ("?token=wrong", {}),
            ("?token=tok-123", {}),
            ("", {"Authorization": "Bearer tok-123"}),
        )

        async def get(session: aiohttp.ClientSession) -> dict[str, list[int]]:
            return {
                path: [await status(session, base + path + query, headers) for query, headers in tries]
                for path in ("", "captions.txt", "events", "ws")
            }

        codes = run(get)
    finally:
        server.stop()
    assert codes == {"": [403, 403, 200, 200], "captions.txt": [403, 403, 200, 200],
                     "events": [403, 403, 200, 200], "ws": [403, 403, 101, 101]}  # fmt: skip


def test_a_port_in_use_is_a_clear_error() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        server = FeedServer(CaptionHub(), BindAddress("127.0.0.1", port))
        with pytest.raises(FeedError, match=f"cannot serve captions on 127.0.0.1:{port}"):
            server.start()
        assert not server.running


def test_readers_beyond_the_limit_are_turned_away_until_one_leaves() -> None:
    hub = CaptionHub()
    hub.begin_session({})
    server = FeedServer(hub, BindAddress("127.0.0.1", 0), max_clients=2)
    server.start()
    try:

        async def crowd(session: aiohttp.ClientSession) -> list[int]:
            first = [await session.get(server.url + "events"), await session.get(server.url + "events")]
            codes = [r.status for r in first]
            codes.append(await status(session, server.url + "ws"))
            codes.append(await status(session, server.url + "captions.txt"))  # not a reader
            first[0].close()
            for _ in range(100):
                if server.clients < 2:
                    break
                await asyncio.sleep(0.02)
            codes.append(await status(session, server.url + "ws"))
            first[1].close()
            return codes

        assert run(crowd) == [200, 200, 503, 200, 101]
    finally:
        server.stop()
