"""A Server-Sent Events and WebSocket reader for the feed tests (aiohttp's client)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass, field

import aiohttp


@dataclass
class Received:
    messages: list[dict] = field(default_factory=list)  # every JSON message, hello and reset included
    last_id: str | None = None

    def tokens(self) -> list[dict]:
        return [t for m in self.messages if m.get("type") == "tokens" for t in m["tokens"]]

    def indices(self) -> list[int]:
        return [t["index"] for t in self.tokens()]


Done = Callable[[Received], bool]


async def read_sse(session: aiohttp.ClientSession, url: str, done: Done, headers: dict | None = None,
                   timeout_s: float = 30.0) -> Received:  # fmt: skip
    got = Received()
    async with asyncio.timeout(timeout_s), session.get(url, headers=headers or {}) as resp:
        assert resp.status == 200, await resp.text()
        assert resp.headers["Content-Type"].startswith("text/event-stream")
        event_id, data = None, []
        async for raw in resp.content:
            line = raw.decode().rstrip("\n")
            if line.startswith("id: "):
                event_id = line[4:]
            elif line.startswith("data: "):
                data.append(line[6:])
            elif line == "" and data:
                got.messages.append(json.loads("\n".join(data)))
                if event_id is not None:
                    got.last_id = event_id
                event_id, data = None, []
                if done(got):
                    break
    return got


async def read_ws(session: aiohttp.ClientSession, url: str, done: Done, timeout_s: float = 30.0,
                  headers: dict | None = None) -> Received:  # fmt: skip
    got = Received()
    async with asyncio.timeout(timeout_s), session.ws_connect(url, headers=headers or {}) as ws:
        async for msg in ws:
            assert msg.type == aiohttp.WSMsgType.TEXT
            got.messages.append(json.loads(msg.data))
            if done(got):
                break
    return got


def has_index(n: int) -> Done:
    """Done once token index ``n`` arrived."""
    return lambda got: bool(got.tokens()) and got.tokens()[-1]["index"] >= n


def run(coro_fn: Callable[[aiohttp.ClientSession], object]) -> object:
    async def main() -> object:
        async with aiohttp.ClientSession() as session:
            return await coro_fn(session)  # type: ignore[misc]

    return asyncio.run(main())
