"""Which audio sources went away during a session, read from capture's notices (a small policy).

Usage::

    lost = LostDevices()
    change = lost.on_notice("audio source 'USB Mic' disappeared; ...")
    change.show      # "Audio source 'USB Mic' disappeared; ...." : the banner line to show
    lost.on_notice("audio source 'USB Mic' is back").withdraw   # that same line, to take down
    lost.clear()     # the session ended: nothing is captured, so nothing waits for them

Capture (``audio/capture.py``) words the notices; a source's line stays in the banner until that
source is back or the session ends. Other notices change nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DEVICE_LOST = re.compile(r"audio source (['\"])(?P<name>.*)\1 (disappeared|stopped sending audio)")
DEVICE_BACK = re.compile(r"audio source (['\"])(?P<name>.*)\1 is back")


@dataclass(frozen=True)
class BannerChange:
    show: str | None = None  # a line to show (a source was lost)
    withdraw: str | None = None  # a line to take down (its source is back)


class LostDevices:
    def __init__(self) -> None:
        self._lines: dict[str, str] = {}  # source name -> the banner line about it

    def on_notice(self, message: str) -> BannerChange:
        lost, back = DEVICE_LOST.match(message), DEVICE_BACK.match(message)
        if lost:
            line = f"{message[:1].upper()}{message[1:]}."
            self._lines[lost["name"]] = line
            return BannerChange(show=line)
        if back and back["name"] in self._lines:
            return BannerChange(withdraw=self._lines.pop(back["name"]))
        return BannerChange()

    def clear(self) -> None:
        self._lines.clear()
