"""The interface every platform's login item implements, its states and its error."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Protocol


class LoginItemState(enum.Enum):
    ON = "on"  # Captionist's own entry exists: it starts at login
    OFF = "off"  # no entry
    FOREIGN = "foreign"  # something Captionist did not write is where its entry goes; left alone
    UNREADABLE = "unreadable"  # the entry's place could not be read (permissions, a locked key); left alone


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


def state_problem(state: LoginItemState, location: str) -> str:
    """Why Captionist leaves the entry alone in ``state`` ("" for ON and OFF), for the user."""
    if state is LoginItemState.FOREIGN:
        return f"{location} exists but was not written by Captionist; it was left as it is"
    if state is LoginItemState.UNREADABLE:
        return f"could not read {location}; it was left as it is"
    return ""


def refuse_unless_ours(state: LoginItemState, location: str) -> None:
    """Raise ``LoginItemError`` unless ``state`` is ON or OFF (the only ones Captionist may change)."""
    problem = state_problem(state, location)
    if problem:
        raise LoginItemError(problem)
