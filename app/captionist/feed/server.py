"""The caption feed's web server: aiohttp on a thread of its own, serving a ``CaptionHub``.

Usage::

    server = FeedServer(hub, BindAddress("127.0.0.1", 0), token=None, page_options=lambda: {...})
    url = server.start()          # "http://127.0.0.1:PORT/" once listening; FeedError if it cannot bind
    server.clients                # readers connected now (SSE + WebSocket)
    server.stop()                 # closes every connection; returns when the thread has ended

Routes (docs/caption-feed.md has the formats):

- ``/`` the caption page for a browser source (``page.html``);
- ``/events`` Server-Sent Events, ``/ws`` WebSocket: a ``hello`` message, then every event in order.
  Resume with ``Last-Event-ID`` (EventSource does it by itself) or ``?after=EPOCH.SEQ``; a reader
  that cannot be resumed gets a ``reset`` message and a fresh start;
- ``/captions.txt`` the current caption lines as plain text (``?lines=&width=``).

Every request goes through ``AccessPolicy.check`` (403 with the reason otherwise); beyond
``max_clients`` readers at once, new ones get 503. Readers never
slow the publisher: each connection is a coroutine that reads the hub's history after its last seq
when the hub wakes the loop, and a reader that falls out of the history is reset. Thread-safety:
``start``/``stop`` from one thread (the GUI's); the hub is published to from any.
"""

from __future__ import annotations

import asyncio
import functools
import json
import threading
from collections.abc import Callable
from importlib import resources
from typing import Any

from aiohttp import WSMsgType, web

from captionist.feed.access import AccessPolicy, BindAddress, shown_host
from captionist.feed.hub import CaptionHub, FeedRead

KEEPALIVE_S = 15.0
MAX_CLIENTS = 256  # readers at once; more get 503 (a page left open in many tabs, a misbehaving script)
READ_LIMIT = 500  # events per write
MAX_LINES, MAX_WIDTH = 20, 400


class FeedError(OSError):
    """The server could not start (the port is taken, the address is not this machine's, ...)."""


def parse_after(value: str | None, epoch: str) -> int | None:
    """A reader's resume point: ``EPOCH.SEQ`` (or a bare ``SEQ``) -> SEQ; None when none was given;
    -1 when it cannot be used (another run's epoch, not a number): the reader is reset."""
    if not value:
        return None
    head, _, tail = value.strip().rpartition(".")
    if head and head != epoch:
        return -1
    try:
        seq = int(tail)
    except ValueError:
        return -1
    return seq if seq >= 0 else -1


class FeedServer:
    def __init__(
        self,
        hub: CaptionHub,
        bind: BindAddress,
        token: str | None = None,
        page_options: Callable[[], dict[str, Any]] | None = None,
        max_clients: int = MAX_CLIENTS,
    ) -> None:
        self.hub = hub
        self.max_clients = max_clients
        self.bind = bind
        self.token = token
        self.policy = AccessPolicy(bind, token)
        self._page_options = page_options or dict
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._stopping: asyncio.Event | None = None
        self._tick: asyncio.Event | None = None
        self._clients = 0
        self.port = 0

    # --- lifecycle ----------------------------------------------------------------------------
    def start(self, timeout_s: float = 10.0) -> str:
        """Listen and return the page's URL (with ``?token=`` when one is needed)."""
        if self._thread is not None:
            return self.url
        self._thread = threading.Thread(target=self._run, name="caption-feed", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout_s):
            raise FeedError(f"the caption feed did not start within {timeout_s:.0f} s")
        if self._error is not None:
            self._thread.join(timeout_s)
            self._thread = None
            error = self._error
            raise FeedError(
                f"cannot serve captions on {self.bind.url_host()}:{self.bind.port}: {error}"
            ) from error
        return self.url

    @property
    def url(self) -> str:
        """The page's address: on all addresses, the one other devices use (``shown_host``)."""
        query = f"?token={self.token}" if self.token else ""
        return f"http://{BindAddress(shown_host(self.bind.host), self.port).url_host()}:{self.port}/{query}"

    @property
    def clients(self) -> int:
        return self._clients

    @property
    def running(self) -> bool:
        return self._thread is not None and self._error is None

    def stop(self, timeout_s: float = 10.0) -> None:
        loop, thread = self._loop, self._thread
        if thread is None:
            return
        if loop is not None and self._stopping is not None:
            loop.call_soon_threadsafe(self._stopping.set)
        thread.join(timeout_s)
        self._thread = None

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._serve())
        except BaseException as exc:  # noqa: BLE001 - reported to start(); the thread ends quietly
            self._error = exc
        finally:
            self._ready.set()
            loop.close()

    async def _serve(self) -> None:
        loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        self._tick = asyncio.Event()
        app = web.Application(middlewares=[self._guard])
        app.router.add_get("/", self._page)
        app.router.add_get("/events", self._sse)
        app.router.add_get("/ws", self._ws)
        app.router.add_get("/captions.txt", self._text)
        # handler_cancellation: a reader that hangs up ends its handler at once (not at the next write)
        runner = web.AppRunner(
            app, access_log=None, handle_signals=False, shutdown_timeout=1.0, handler_cancellation=True
        )
        await runner.setup()
        try:
            site = web.TCPSite(runner, self.bind.host, self.bind.port)
            await site.start()
            self.port = int(runner.addresses[0][1])
            self.policy = AccessPolicy(BindAddress(self.bind.host, self.port), self.token)
            wake = lambda: loop.call_soon_threadsafe(self._wake)  # noqa: E731 - the hub's listener
            self.hub.add_listener(wake)
            self._ready.set()
            try:
                await self._stopping.wait()
            finally:
                self.hub.remove_listener(wake)
                self._wake()  # readers see _stopping and end
        finally:
            await runner.cleanup()

    def _wake(self) -> None:
        tick, self._tick = self._tick, asyncio.Event()
        if tick is not None:
            tick.set()

    # --- requests -----------------------------------------------------------------------------
    @web.middleware
    async def _guard(self, request: web.Request, handler: Callable[..., Any]) -> web.StreamResponse:
        why = self.policy.check(request.headers, request.query, websocket=request.path == "/ws")
        if why is not None:
            return web.Response(status=403, text=why + "\n")
        if request.path in ("/events", "/ws") and self._clients >= self.max_clients:
            return web.Response(status=503, text=f"at most {self.max_clients} readers at once\n")
        return await handler(request)

    async def _page(self, request: web.Request) -> web.Response:
        html = _page_html()
        options = json.dumps(self._page_options()).replace("<", "\\u003c")  # no "</script>" inside
        return web.Response(
            text=html.replace("/*CAPTIONIST_OPTIONS*/{}", options),
            content_type="text/html",
            headers={"Cache-Control": "no-store"},
        )

    async def _text(self, request: web.Request) -> web.Response:
        lines = _int_param(request, "lines", 2, 1, MAX_LINES)
        width = _int_param(request, "width", 42, 8, MAX_WIDTH)
        text = "\n".join(self.hub.current_lines(lines, width))
        return web.Response(text=text + ("\n" if text else ""), headers={"Cache-Control": "no-store"})

    def _hello(self) -> str:
        return json.dumps(
            {
                "type": "hello",
                "epoch": self.hub.epoch,
                "seq": self.hub.last_seq,
                "active": self.hub.active,
                "style": self.hub.style(),
            },  # fmt: skip
            separators=(",", ":"),
        )

    async def _next(self, after: int | None, first: bool) -> FeedRead | None:
        """What a reader at ``after`` gets next: the fresh start or resumption at once (``first``),
        else waits for the hub (an empty read every ``KEEPALIVE_S``); None when stopping."""
        assert self._stopping is not None
        while not self._stopping.is_set():
            tick = self._tick
            assert tick is not None
            got = self.hub.read(after, READ_LIMIT)
            if got.items or got.reset or first:
                return got
            try:
                await asyncio.wait_for(tick.wait(), KEEPALIVE_S)
            except asyncio.TimeoutError:
                return FeedRead(False, [], got.next_after)
        return None

    async def _sse(self, request: web.Request) -> web.StreamResponse:
        after = parse_after(
            request.headers.get("Last-Event-ID") or request.query.get("after"), self.hub.epoch
        )
        resp = web.StreamResponse(
            headers={
                "Content-Type": "text/event-stream",
                "Cache-Control": "no-store",
                "X-Accel-Buffering": "no",
            }
        )
        await resp.prepare(request)
        self._clients += 1
        try:
            await resp.write(f"retry: 1000\ndata: {self._hello()}\n\n".encode())
            first = True
            while (got := await self._next(after, first)) is not None:
                first, after = False, got.next_after
                out = ['data: {"type":"reset"}\n\n'] if got.reset else []
                out += [f"id: {self.hub.epoch}.{seq}\ndata: {text}\n\n" for seq, text in got.items]
                await resp.write(("".join(out) or ": keep-alive\n\n").encode())
        except ConnectionResetError:
            pass
        finally:
            self._clients -= 1
        return resp

    async def _ws(self, request: web.Request) -> web.StreamResponse:
        ws = web.WebSocketResponse(heartbeat=30.0)
        await ws.prepare(request)
        after = parse_after(request.query.get("after"), self.hub.epoch)
        self._clients += 1
        closed = asyncio.ensure_future(self._drain(ws))
        try:
            await ws.send_str(self._hello())
            first = True
            while not ws.closed and (got := await self._next_or_close(after, first, closed)) is not None:
                first, after = False, got.next_after
                if got.reset:
                    await ws.send_str('{"type":"reset"}')
                for _seq, text in got.items:
                    await ws.send_str(text)
        except ConnectionResetError:
            pass
        finally:
            self._clients -= 1
            closed.cancel()
        await ws.close()
        return ws

    async def _next_or_close(
        self, after: int | None, first: bool, closed: asyncio.Future[None]
    ) -> FeedRead | None:
        """``_next``, or None as soon as the client has closed the WebSocket."""
        nxt = asyncio.ensure_future(self._next(after, first))
        try:
            done, _ = await asyncio.wait({nxt, closed}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not nxt.done():  # the client closed, or the handler is cancelled (stop)
                nxt.cancel()
        return nxt.result() if nxt in done else None

    async def _drain(self, ws: web.WebSocketResponse) -> None:
        """Read (and ignore) what the client sends until it closes."""
        async for msg in ws:
            if msg.type in (WSMsgType.CLOSE, WSMsgType.ERROR):
                break


@functools.cache
def _page_html() -> str:
    """The caption page (read once)."""
    return resources.files("captionist.feed").joinpath("page.html").read_text(encoding="utf-8")


def _int_param(request: web.Request, name: str, default: int, lo: int, hi: int) -> int:
    try:
        return min(hi, max(lo, int(request.query.get(name, default))))
    except ValueError:
        return default
