"""The caption page in a real browser with Arabic and Chinese captions: an Arabic line reads from
the right (and starts at the right edge), a Chinese line holds its characters with no space added.
No audio here: the captions come from a session controller's signals, as in the app."""

from __future__ import annotations

import socket

import pytest

from captionist.feed.caption_feed import CaptionFeed
from captionist.settings import Settings
from tests.e2e.conftest import unavailable
from tests.fakes.caption_updates import UpdateMaker
from tests.feed.test_caption_feed import Config, FakeController
from tools.headless_chromium import ChromiumUnavailable, HeadlessChromium

pytestmark = pytest.mark.e2e

AR = [" مرحبا", " بكم", " في", " الاجتماع"]
ZH = ["大家", "早上好。", "今天", "开会"]
LINES = """[...document.querySelectorAll('#captions .line')].map(el => {
  const r = el.getBoundingClientRect(), range = document.createRange();
  range.selectNodeContents(el);
  const t = range.getBoundingClientRect();
  return {text: el.innerText, direction: getComputedStyle(el).direction, right: r.right, textRight: t.right,
          textLeft: t.left, left: r.left};
})"""


def test_arabic_reads_from_the_right_and_chinese_gets_no_spaces(qapp) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    settings = Settings()
    settings.feed.enabled, settings.feed.port = True, port
    feed, controller, u = CaptionFeed(settings), FakeController(), UpdateMaker()
    feed.attach(controller)
    feed.apply()
    try:
        browser = HeadlessChromium(width=1000, height=240)
        browser.start()
    except ChromiumUnavailable as exc:
        feed.shutdown()
        unavailable(f"the caption page test needs a browser: {exc}")
    try:
        with browser:
            browser.open(feed.url)
            controller.session_started.emit(Config())
            controller.caption.emit(u.make(AR, ends=[len(AR)]))
            controller.caption.emit(u.make(ZH))
            browser.wait_for("document.querySelectorAll('#captions .line').length >= 2", timeout_s=30)
            arabic, chinese = browser.evaluate(LINES)[-2:]
            spans = browser.evaluate(
                "[...document.querySelectorAll('#captions .line')].at(-1).querySelectorAll('span').length"
            )
            newest = browser.evaluate(
                "[...document.querySelectorAll('#captions .newest')].map(s => s.textContent)"
            )
    finally:
        feed.shutdown()
    assert arabic["text"] == "مرحبا بكم في الاجتماع" and arabic["direction"] == "rtl"
    assert abs(arabic["textRight"] - arabic["right"]) < 2  # starts at the right edge
    assert arabic["textLeft"] > arabic["left"] + 100  # and does not fill the line
    assert chinese["text"] == "大家早上好。今天开会" and chinese["direction"] == "ltr"
    assert spans == len(ZH) and newest == ZH  # each token its own word: the newest ones are marked
