"""The test browser (tools/headless_chromium.py) leaves no browser behind: the caption page tests
start it, to skip cleanly where there is none, and then use it in a ``with`` block."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tools.headless_chromium import ChromiumUnavailable, HeadlessChromium


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_started_then_used_in_a_with_block_it_is_one_browser_and_it_is_gone_after() -> None:
    browser = HeadlessChromium(width=320, height=200)
    try:
        browser.start()
    except ChromiumUnavailable as exc:
        pytest.skip(str(exc))
    first = browser._proc
    assert first is not None
    with browser:  # used to start a second browser and close only that one
        assert browser._proc is first
        assert browser.evaluate("1 + 1") == 2
    assert first.poll() is not None and not alive(first.pid)
    assert browser._profile is not None and not os.path.exists(browser._profile)
