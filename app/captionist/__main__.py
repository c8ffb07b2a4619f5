"""``python -m captionist`` / ``captionist``: no arguments starts the desktop app, else the CLI.

``captionist --quit-after SECONDS`` (not in ``--help``) starts the desktop app and quits it after that
many seconds; the installers' smoke test uses it to check that the frozen app starts and exits cleanly.
``captionist --in-tray`` (what a login item runs; with ``--quit-after`` too) starts it with the
window closed to the tray (``run_gui(in_tray=True)``).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from captionist import frozen
from captionist.autostart.command import IN_TRAY

QUIT_AFTER = "--quit-after"


def quit_after_seconds(args: Sequence[str]) -> float | None:
    """``SECONDS`` when ``args`` is exactly ``--quit-after SECONDS`` (a positive number), else None."""
    if len(args) != 2 or args[0] != QUIT_AFTER:
        return None
    try:
        seconds = float(args[1])
    except ValueError:
        return None
    return seconds if seconds > 0 else None


def gui_request(args: Sequence[str]) -> tuple[bool, float | None] | None:
    """``(in_tray, quit_after_s)`` when ``args`` start the desktop app (none, ``--in-tray``,
    ``--quit-after SECONDS``, or both), else None: a command-line command."""
    rest = list(args)
    in_tray = IN_TRAY in rest
    if in_tray:
        rest.remove(IN_TRAY)
    if not rest:
        return in_tray, None
    quit_after_s = quit_after_seconds(rest)
    return None if quit_after_s is None else (in_tray, quit_after_s)


def run_gui_or_explain(quit_after_s: float | None = None, *, in_tray: bool = False) -> int:
    """Start the desktop app; if it cannot be imported, say why on stderr and return 1.

    With ``quit_after_s`` the app quits by itself after that many seconds (exit status 0 when clean).
    """
    try:
        from captionist.ui.app import run_gui
    except ImportError as exc:
        print(
            f"captionist: the desktop app is not available ({exc}); see 'captionist --help' for commands",
            file=sys.stderr,
        )
        return 1
    if quit_after_s is not None:
        from PySide6.QtCore import QTimer
        from PySide6.QtWidgets import QApplication

        app = QApplication.instance() or QApplication(sys.argv[:1])  # run_gui() uses this one
        QTimer.singleShot(int(quit_after_s * 1000), app.quit)
    return int(run_gui(in_tray=in_tray) or 0)


def main(argv: Sequence[str] | None = None) -> int:
    """Run Captionist with ``argv`` (default ``sys.argv[1:]``); returns the exit status."""
    frozen.prepare()
    args = list(sys.argv[1:] if argv is None else argv)
    gui = gui_request(args)
    if gui is not None:
        in_tray, quit_after_s = gui
        return run_gui_or_explain(quit_after_s, in_tray=in_tray)
    from captionist.cli import run

    return run(args)


if __name__ == "__main__":
    sys.exit(main())
