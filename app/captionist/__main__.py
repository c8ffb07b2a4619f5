"""``python -m captionist`` / ``captionist``: no arguments starts the desktop app, else the CLI."""

from __future__ import annotations

import sys
from collections.abc import Sequence


def run_gui_or_explain() -> int:
    """Start the desktop app; if it cannot be imported, say why on stderr and return 1."""
    try:
        from captionist.ui.app import run_gui
    except ImportError as exc:
        print(
            f"captionist: the desktop app is not available ({exc}); see 'captionist --help' for commands",
            file=sys.stderr,
        )
        return 1
    return int(run_gui() or 0)


def main(argv: Sequence[str] | None = None) -> int:
    """Run Captionist with ``argv`` (default ``sys.argv[1:]``); returns the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        return run_gui_or_explain()
    from captionist.cli import run

    return run(args)


if __name__ == "__main__":
    sys.exit(main())
