"""Caption-feed readers in a process of their own (for bench_feed_clients.py).

    python bench/feed_clients.py URL N [--cpu K]

Opens N readers of the feed at URL (every other one Server-Sent Events, the rest WebSocket), all
from ``after=0``, prints ``ready`` once all are connected, reads until each has seen
``session_stop``, then prints one JSON line: the text-token indices each reader got, checked to be
0..n-1 exactly once and in order. ``--cpu K`` pins this process to CPU K.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

import aiohttp


async def sse(session: aiohttp.ClientSession, url: str) -> list[int]:
    got: list[int] = []
    async with session.get(url + "events?after=0") as resp:
        async for raw in resp.content:
            line = raw.decode()
            if line.startswith("data: "):
                msg = json.loads(line[6:])
                got += [t["index"] for t in msg.get("tokens", [])]
                if msg["type"] == "session_stop":
                    break
    return got


async def ws(session: aiohttp.ClientSession, url: str) -> list[int]:
    got: list[int] = []
    async with session.ws_connect(url.replace("http://", "ws://") + "ws?after=0") as sock:
        async for frame in sock:
            msg = json.loads(frame.data)
            got += [t["index"] for t in msg.get("tokens", [])]
            if msg["type"] == "session_stop":
                break
    return got


async def main(url: str, n: int) -> dict:
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        tasks = [asyncio.ensure_future((sse if k % 2 == 0 else ws)(session, url)) for k in range(n)]
        print("ready", flush=True)
        results = await asyncio.gather(*tasks)
    counts = [len(r) for r in results]
    exact = all(r == list(range(len(r))) for r in results) and len(set(counts)) == 1
    return {"clients": n, "tokens_each": counts[0] if counts else 0, "all_exactly_once_in_order": exact}


if __name__ == "__main__":
    if "--cpu" in sys.argv:
        os.sched_setaffinity(0, {int(sys.argv[sys.argv.index("--cpu") + 1])})
    print(json.dumps(asyncio.run(main(sys.argv[1], int(sys.argv[2])))), flush=True)
