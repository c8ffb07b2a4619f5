"""What changes when Captionist runs from an installer's bundle (PyInstaller) instead of a Python install.

Usage::

    from captionist import frozen
    frozen.prepare()          # first thing in main(); does nothing unless frozen
    frozen.is_frozen()        # True inside the .app, the Windows install and the Linux bundle
    frozen.resource_dir()     # <bundle>/captionist/resources when frozen, else None

PyInstaller sets ``sys.frozen`` and ``sys._MEIPASS`` (the folder that holds the bundled files). The
bundle's layout is set by ``packaging/captionist.spec``::

    <bundle>/captionist/_engine.*              the engine extension
    <bundle>/captionist/resources/             icons, style sheet, desktop file
    <bundle>/captionist/models_data/demo.gguf  the demo model
    <bundle>/captionist/feed/page.html         the caption page
    <bundle>/captionist/help/README.md         what Help opens (``ui/help_link.py``)
    <bundle>/                                  ggml's shared libraries (every backend of the build),
                                               beside Qt's and Python's

so code that finds files next to its module (``paths.bundled_demo_model``) works unchanged.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

# A backend built as a loadable module (GGML_BACKEND_DL): libggml-cpu-haswell.so, ggml-cuda.dll, ...
# Linked backends (the PyPI wheels: CPU, BLAS, Metal) have a soname (libggml-cpu.so.0) and need no
# loading; on Windows, where DLLs have none, ggml's loader skips them: they export no ggml_backend_init.
_DL_BACKEND = re.compile(
    r"^(lib)?ggml-(blas|cann|cpu|cuda|hip|metal|musa|opencl|rpc|sycl|vulkan|webgpu|zdnn)(-\w+)?\.(so|dll|dylib)$"
)


def is_frozen() -> bool:
    """True when running from a PyInstaller bundle."""
    return bool(getattr(sys, "frozen", False)) and hasattr(sys, "_MEIPASS")


def bundle_dir() -> Path | None:
    """The folder holding the bundled files (``sys._MEIPASS``), or None when not frozen."""
    return Path(sys._MEIPASS) if is_frozen() else None  # type: ignore[attr-defined]


def resource_dir() -> Path | None:
    """The bundled ``captionist/resources`` folder, or None when not frozen."""
    base = bundle_dir()
    return base / "captionist" / "resources" if base else None


def dynamic_backends(folder: Path) -> list[Path]:
    """ggml backends in ``folder`` that were built as loadable modules (none in a linked build)."""
    return sorted(p for p in folder.glob("*ggml-*") if _DL_BACKEND.match(p.name))


def ggml_library(folder: Path) -> Path | None:
    """ggml's main library in ``folder`` (``libggml.so.0``, ``libggml.0.dylib``, ``ggml.dll``)."""
    for pattern in ("ggml.dll", "libggml.so.*", "libggml.*.dylib", "libggml.dylib", "libggml.so"):
        for path in sorted(folder.glob(pattern)):
            return path
    return None


def dynamic_backend_folder(base: Path) -> Path | None:
    """The folder of the bundle at ``base`` that holds ggml's loadable backends (None: a linked build).

    ggml's own search (``ggml_backend_load_all()``) looks beside the executable and in the working
    directory, and PyInstaller puts libraries in neither (``_internal``, ``Contents/Frameworks``,
    where it may keep libggml-python's ``libggml/<lib dir>`` layout). The engine loads them from the
    folder ``CAPTIONIST_GGML_MODULES`` names (``captionist.engine_backends``: the CPU's best variant,
    then each GPU driver under the app's crash guard); the modules link the ggml the engine has open.
    """
    for folder in (base, *sorted(base.glob("libggml/*"))):
        if (ggml_library(base) or ggml_library(folder)) is not None and dynamic_backends(folder):
            return folder
    return None


def prepare() -> None:
    """Set up the process for a frozen run; a no-op otherwise. Call once, before Qt or the engine load.

    - Windows: add the bundle folder (and ``libggml/<dir>``, where PyInstaller may keep the wheel's
      layout) to the DLL search, so the engine extension, in a subfolder, finds ggml's DLLs
      (Python 3.8+ no longer searches PATH for an extension's dependencies).
    - Windows GUI build (no console): ``sys.stdout``/``sys.stderr`` are None; point them at the null
      device so a stray print or a library's warning cannot raise.
    - Linux: PyInstaller's bootloader puts the bundle on ``LD_LIBRARY_PATH``. The loader of this
      process read it at start-up already; restore the user's value so that programs the app starts
      (``pactl``, ``xdg-open``) load the system's libraries, not the bundle's.
    - ggml backends built as loadable modules: their folder is where the engine will load them
      from (``CAPTIONIST_GGML_MODULES``, unless the user set it; ``dynamic_backend_folder``).
    """
    base = bundle_dir()
    if base is None:
        return
    if sys.platform == "win32":
        for folder in (base, *sorted(base.glob("libggml/*"))):
            os.add_dll_directory(str(folder))
    for name in ("stdout", "stderr"):
        if getattr(sys, name) is None:
            setattr(sys, name, open(os.devnull, "w", encoding="utf-8"))  # kept open for the process
    if sys.platform.startswith("linux"):
        original = os.environ.pop("LD_LIBRARY_PATH_ORIG", None)
        if original is not None:
            os.environ["LD_LIBRARY_PATH"] = original
        else:
            os.environ.pop("LD_LIBRARY_PATH", None)
    folder = dynamic_backend_folder(base)
    if folder is not None and not os.environ.get("CAPTIONIST_GGML_MODULES"):
        os.environ["CAPTIONIST_GGML_MODULES"] = str(folder)
