"""What a screen reader gets from an app: its accessible tree and its announcements, over AT-SPI.

Run under a Python with PyGObject and AT-SPI's introspection data (Debian: python3-gi,
gir1.2-atspi-2.0), on the session bus the app will use, before the app starts::

    /usr/bin/python3 tests/e2e/screen_reader_listener.py --app Captionist --button Start \
        --announcement "settings file" --timeout 60 --out tree.json

It says it is a screen reader (``org.a11y.Status.ScreenReaderEnabled``, as Orca does), listens for
announcements, prints ``ready``, and waits until the app shows a push button named ``--button`` and
has announced a text containing ``--announcement``; with ``--until-gone`` instead, until the app
has come and gone (every announcement of its run). At most ``--timeout`` seconds. Then it writes
JSON: ``{"found", "announcements": [{"text", "politeness"}], "nodes": [{"role", "name",
"labelled_by", "description", "focusable", "showing", "depth"}]}``. Standard library and gi only: it
does not import Captionist (its interpreter may not have it).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import gi

gi.require_version("Atspi", "2.0")
from gi.repository import Atspi, Gio, GLib  # noqa: E402

MAX_NODES = 5000


def say_a_screen_reader_runs() -> None:
    bus = Gio.bus_get_sync(Gio.BusType.SESSION, None)
    bus.call_sync(
        "org.a11y.Bus",
        "/org/a11y/bus",
        "org.freedesktop.DBus.Properties",
        "Set",
        GLib.Variant("(ssv)", ("org.a11y.Status", "ScreenReaderEnabled", GLib.Variant("b", True))),
        None,
        Gio.DBusCallFlags.NONE,
        10_000,
        None,
    )


def find_app(name: str) -> Any:
    desktop = Atspi.get_desktop(0)
    for i in range(desktop.get_child_count()):
        app = desktop.get_child_at_index(i)
        if app is not None and app.get_name() == name:
            return app
    return None


def nodes_of(root: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []

    def walk(node: Any, depth: int) -> None:
        if node is None or len(out) >= MAX_NODES:
            return
        states = node.get_state_set()
        labels = [
            relation.get_target(i).get_name()
            for relation in node.get_relation_set()
            if relation.get_relation_type() == Atspi.RelationType.LABELLED_BY
            for i in range(relation.get_n_targets())
        ]
        out.append(
            {
                "role": node.get_role_name(),
                "name": node.get_name() or "",
                "labelled_by": labels,
                "description": node.get_description() or "",
                "focusable": states.contains(Atspi.StateType.FOCUSABLE),
                "showing": states.contains(Atspi.StateType.SHOWING),
                "depth": depth,
            }
        )
        for i in range(node.get_child_count()):
            walk(node.get_child_at_index(i), depth + 1)

    walk(root, 0)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--app", required=True)
    ap.add_argument("--button", default="")
    ap.add_argument("--announcement", default="")
    ap.add_argument("--until-gone", action="store_true")
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()

    Atspi.init()
    say_a_screen_reader_runs()
    announcements: list[dict[str, Any]] = []

    def on_announcement(event: Any) -> None:
        announcements.append({"text": str(event.any_data), "politeness": int(event.detail1)})

    listener = Atspi.EventListener.new(on_announcement)
    listener.register("object:announcement")
    print("ready", flush=True)
    loop = GLib.MainLoop()
    deadline = time.monotonic() + args.timeout
    result: dict[str, Any] = {"found": False, "announcements": announcements, "nodes": []}

    def poll() -> bool:
        app = find_app(args.app)
        if args.until_gone:
            result["found"] = result["found"] or app is not None
            done = result["found"] and app is None
        else:
            nodes = nodes_of(app) if app is not None else []
            has_button = any(n["role"] == "push button" and n["name"] == args.button for n in nodes)
            announced = any(args.announcement in a["text"] for a in announcements)
            done = has_button and announced
            result.update(found=app is not None, nodes=nodes)
        if done or time.monotonic() > deadline:
            loop.quit()
            return False
        return True

    GLib.timeout_add(250, poll)
    loop.run()
    args.out.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
