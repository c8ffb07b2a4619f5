"""A fake ``RunKey`` (the Windows Run key), a dict that can be made to fail like a locked registry."""

from __future__ import annotations

from typing import Any

from captionist.autostart.windows_run_key import REG_SZ


class FakeRunKey:
    def __init__(self) -> None:
        self.values: dict[str, tuple[Any, int]] = {}
        self.fail_with: OSError | None = None  # raised by every call while set

    def _check(self) -> None:
        if self.fail_with is not None:
            raise self.fail_with

    def get(self, name: str) -> tuple[Any, int] | None:
        self._check()
        return self.values.get(name)

    def set_string(self, name: str, data: str) -> None:
        self._check()
        self.values[name] = (data, REG_SZ)

    def delete(self, name: str) -> None:
        self._check()
        if name not in self.values:
            raise FileNotFoundError(2, "The system cannot find the file specified")
        del self.values[name]
