"""Headless Chromium driven over the DevTools protocol: open a page, read it, take a screenshot.

Usage::

    with HeadlessChromium(width=1000, height=240) as browser:
        browser.open("http://127.0.0.1:8791/")
        browser.evaluate("document.body.innerText")              # a JSON value
        browser.wait_for("document.body.innerText.includes('hello')", timeout_s=30)
        browser.screenshot(Path("page.png"), transparent=True)   # PNG, alpha kept

Starts Debian's ``chromium`` (or ``$CHROMIUM``) with a private profile and
``--remote-debugging-port=0``, reads the port from the profile's ``DevToolsActivePort`` and talks
to one page target through aiohttp's WebSocket client on a private event loop. For tests and
``tools/take_screenshots.py``; ``ChromiumUnavailable`` when there is no browser.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp


class ChromiumUnavailable(RuntimeError):
    pass


def chromium_path() -> str | None:
    for name in (os.environ.get("CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


class HeadlessChromium:
    def __init__(self, width: int = 1000, height: int = 240, start_timeout_s: float = 30.0) -> None:
        self.width, self.height = width, height
        self.start_timeout_s = start_timeout_s
        self._ids = itertools.count(1)
        self._loop = asyncio.new_event_loop()
        self._proc: subprocess.Popen[bytes] | None = None
        self._profile: str | None = None
        self._http: aiohttp.ClientSession | None = None
        self._ws: aiohttp.ClientWebSocketResponse | None = None
        self._session: str | None = None

    def __enter__(self) -> HeadlessChromium:
        if self._proc is None:  # started already: the tests start it first to skip without one
            self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        exe = chromium_path()
        if exe is None:
            raise ChromiumUnavailable("no chromium on PATH (Debian: apt-get install chromium)")
        self._profile = tempfile.mkdtemp(prefix="captionist-chromium-")
        self._proc = subprocess.Popen(
            [
                exe,
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-background-networking",
                "--remote-debugging-port=0",
                f"--user-data-dir={self._profile}",
                f"--window-size={self.width},{self.height}",
                "about:blank",
            ],  # fmt: skip
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        port_file = Path(self._profile) / "DevToolsActivePort"
        deadline = time.monotonic() + self.start_timeout_s
        while not (port_file.exists() and port_file.read_text().strip()):
            if self._proc.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise ChromiumUnavailable("chromium did not start its DevTools endpoint")
            time.sleep(0.1)
        port, path = port_file.read_text().split()[:2]
        self._loop.run_until_complete(self._connect(f"ws://127.0.0.1:{port}{path}"))

    async def _connect(self, browser_ws: str) -> None:
        self._http = aiohttp.ClientSession()
        self._ws = await self._http.ws_connect(browser_ws, max_msg_size=0)
        target = await self._call("Target.createTarget", {"url": "about:blank"}, browser=True)
        attached = await self._call(
            "Target.attachToTarget", {"targetId": target["targetId"], "flatten": True}, browser=True
        )
        self._session = attached["sessionId"]
        await self._call("Page.enable")
        await self._call(
            "Emulation.setDeviceMetricsOverride",
            {"width": self.width, "height": self.height, "deviceScaleFactor": 1, "mobile": False},
        )

    async def _call(self, method: str, params: dict[str, Any] | None = None, browser: bool = False) -> Any:
        assert self._ws is not None
        msg_id = next(self._ids)
        msg: dict[str, Any] = {"id": msg_id, "method": method, "params": params or {}}
        if not browser:
            msg["sessionId"] = self._session
        await self._ws.send_str(json.dumps(msg))
        while True:
            reply = json.loads((await self._ws.receive(timeout=60)).data)
            if reply.get("id") == msg_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        return self._loop.run_until_complete(self._call(method, params))

    def open(self, url: str, timeout_s: float = 30.0) -> None:
        self.call("Page.navigate", {"url": url})
        self.wait_for("document.readyState === 'complete'", timeout_s)

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails'].get('text')}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout_s: float = 30.0) -> Any:
        """Poll ``expression`` until it is truthy; its value (TimeoutError after ``timeout_s``)."""
        deadline = time.monotonic() + timeout_s
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(f"still false after {timeout_s:.0f} s: {expression}")
            time.sleep(0.1)

    def screenshot(self, path: Path, transparent: bool = True) -> Path:
        if transparent:
            self.call(
                "Emulation.setDefaultBackgroundColorOverride", {"color": {"r": 0, "g": 0, "b": 0, "a": 0}}
            )
        data = self.call("Page.captureScreenshot", {"format": "png"})["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        async def shut() -> None:
            if self._ws is not None:
                await self._ws.close()
            if self._http is not None:
                await self._http.close()

        try:
            self._loop.run_until_complete(shut())
        finally:
            self._loop.close()
            if self._proc is not None:
                self._proc.terminate()
                try:
                    self._proc.wait(10)
                except subprocess.TimeoutExpired:
                    self._proc.kill()
            if self._profile is not None:
                shutil.rmtree(self._profile, ignore_errors=True)
