"""The ``captionist`` command line: ``transcribe``, ``convert``, ``quantize``, ``live``, ``devices``.

Usage::

    captionist transcribe talk.flac --format srt -o talk.srt
    captionist convert Voxtral-Mini-4B-Realtime-2602/ -o voxtral.gguf --outtype f16
    captionist quantize voxtral.gguf voxtral-q4km.gguf Q4_K_M
    captionist live --device 3 --duration 60 -o meeting.srt
    captionist devices

Exit status: 0 success, 2 bad usage or a failure reported as one ``captionist: error: ...`` line
(no traceback), 130 interrupted.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from captionist import __version__
from captionist.cli_errors import CliError
from captionist.cli_tools import add_parsers as add_tool_parsers
from captionist.cli_transcribe import add_parser as add_transcribe_parser

if TYPE_CHECKING:
    from captionist.backend_guard import BackendCrash


def is_user_error(exc: BaseException) -> bool:
    """True for failures that carry a message meant for the user (house rule: layered errors).

    That is ``CliError``, ``ValueError``, ``OSError`` and any error class the package defines
    (``EngineError``, ``ConversionError``, ``AudioUnavailable``, ``DeviceNotFound``, ...).
    """
    if isinstance(exc, (CliError, ValueError, OSError)):
        return True
    return type(exc).__module__.startswith("captionist.")


def _install_backend_guard() -> list[BackendCrash]:
    """The app's GPU crash guard (``captionist.backend_guard``), for the commands too: a driver that
    crashed the app or a command is not started, and one that crashes now is off from the next run."""
    from captionist.backend_guard import user_guard

    return user_guard().install()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="captionist",
        description="Live captions, fully offline. Run without arguments to start the desktop app.",
    )
    parser.add_argument("--version", action="version", version=f"captionist {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    add_transcribe_parser(sub)
    add_tool_parsers(sub)
    return parser


def run(argv: Sequence[str]) -> int:
    """Parse ``argv`` and run the command; returns the exit status (never raises for user errors)."""
    parser = build_parser()
    try:
        args = parser.parse_args(list(argv))
    except SystemExit as exc:  # --help, --version and usage errors
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    for crash in _install_backend_guard():
        print(f"captionist: {crash.message()}", file=sys.stderr)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        print("captionist: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if not is_user_error(exc):
            raise  # a bug: keep the traceback
        message = " ".join(str(exc).split()) or type(exc).__name__
    print(f"captionist: error: {message}", file=sys.stderr)
    return 2
