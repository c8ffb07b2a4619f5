"""The interface every platform's login item implements, its states and its error."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Protocol


class LoginItemState(enum.Enum):
    ON = "on"  # Captionist's own entry exists: it starts at login
    OFF = "off"  # no entry
    FOREIGN = "foreign"  # something Captionist did not write is where its entry goes; left alone


class LoginItemError(Exception):
    """A login item could not be read, written or removed; the message is for the user."""


class LoginItem(Protocol):
    def location(self) -> str:
        """Where the entry lives (a file path or a registry value), for messages."""
        ...

    def state(self) -> LoginItemState:
        """What is there now; never raises."""
        ...

    def enable(self, command: Sequence[str]) -> None:
        """Start ``command`` (argv, first item the program) at login; raises ``LoginItemError``."""
        ...

    def disable(self) -> None:
        """Remove Captionist's entry (nothing to do when there is none); raises ``LoginItemError``."""
        ...


def foreign_error(location: str) -> LoginItemError:
    return LoginItemError(f"{location} exists but was not written by Captionist; it was left as it is")
