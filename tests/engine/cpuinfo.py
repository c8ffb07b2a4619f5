"""Fields of Linux's /proc/cpuinfo, for tests whose expectations depend on the processor."""

from __future__ import annotations

from pathlib import Path

CPUINFO = Path("/proc/cpuinfo")


def cpuinfo_field(name: str) -> str:
    """The first processor's ``name`` field ("flags", "vendor_id"), or "" where there is none."""
    try:
        text = CPUINFO.read_text()
    except OSError:
        return ""
    for line in text.splitlines():
        if line.split(":", 1)[0].strip() == name:
            return line.split(":", 1)[1].strip()
    return ""
