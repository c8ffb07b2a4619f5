"""macOS: keep the caption overlay visible when Captionist is in the background, on every Space
and over full-screen apps.

Usage::

    flags = pin_macos_overlay(overlay)   # after the overlay is shown (its NSWindow exists)
    flags.level, flags.hides_on_deactivate, flags.collection_behavior

Qt makes a ``Qt.Tool`` window an NSPanel that hides when the app deactivates and sits at the
floating level, which full-screen apps (their own Space) cover. This sets, on the NSWindow behind
``winId()`` (an NSView pointer): ``hidesOnDeactivate = NO``, level ``NSStatusWindowLevel`` and the
collection behaviour CanJoinAllSpaces | FullScreenAuxiliary | Stationary, then reads them back.

pyobjc (``objc``, ``AppKit``; pyobjc-framework-Cocoa, a darwin-only dependency) is imported lazily
and injectable, so the call sequence is tested on any OS (tests/fakes/fake_appkit.py). GUI thread
only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from PySide6.QtWidgets import QWidget


class MacOverlayUnavailable(RuntimeError):
    """pyobjc is missing or the widget has no NSWindow yet; the message says which."""


@dataclass(frozen=True)
class MacWindowFlags:
    """What the NSWindow reports after ``pin_macos_overlay``."""

    hides_on_deactivate: bool
    level: int
    collection_behavior: int  # NSWindowCollectionBehavior bit mask


def overlay_collection_behavior(appkit: Any) -> int:
    """CanJoinAllSpaces | FullScreenAuxiliary | Stationary, from AppKit's constants."""
    return int(
        appkit.NSWindowCollectionBehaviorCanJoinAllSpaces
        | appkit.NSWindowCollectionBehaviorFullScreenAuxiliary
        | appkit.NSWindowCollectionBehaviorStationary
    )


def _import_pyobjc() -> tuple[Any, Any]:
    try:
        import AppKit
        import objc
    except Exception as exc:  # ImportError off macOS or without pyobjc-framework-Cocoa
        raise MacOverlayUnavailable(f"pyobjc is unavailable ({exc})") from exc
    return objc, AppKit


def pin_macos_overlay(widget: QWidget, *, objc: Any = None, appkit: Any = None) -> MacWindowFlags:
    """Set the overlay's NSWindow flags (see the module docstring) and return them as read back.

    Raises ``MacOverlayUnavailable`` without pyobjc or before the widget has a window."""
    if objc is None or appkit is None:
        objc, appkit = _import_pyobjc()
    view = objc.objc_object(c_void_p=int(widget.winId()))
    window = view.window()
    if window is None:
        raise MacOverlayUnavailable("the overlay's NSView is not in a window yet")
    window.setHidesOnDeactivate_(False)
    window.setLevel_(appkit.NSStatusWindowLevel)
    window.setCollectionBehavior_(overlay_collection_behavior(appkit))
    return MacWindowFlags(
        hides_on_deactivate=bool(window.hidesOnDeactivate()),
        level=int(window.level()),
        collection_behavior=int(window.collectionBehavior()),
    )
