"""What the installers' bundle holds and leaves out; ``captionist.spec`` applies it, tests check it.

Usage::

    from bundle_contents import EXCLUDES, keep_qt_plugin, is_runtime_library
    keep_qt_plugin("platforms", "libqxcb.so")        # True
    is_runtime_library("libggml.so", {"libggml.so", "libggml.so.0"})   # False: libggml.so.0 is the one

Qt: a widgets app with an SVG icon needs a platform plugin, the SVG image-format and icon-engine
plugins, the native style and input methods, and QtNetwork for its local socket (one instance per
user); everything else (and what it would pull in: QtQuick,
QtPdf, the virtual keyboard, GTK) stays out. Python: optional imports of our dependencies that the
app never reaches (``tests/packaging`` imports the app's download and file code with these blocked).
"""

from __future__ import annotations

import re

# Plugin type -> plugin file stems (without ``lib`` and the suffix) to keep; all platforms in one table.
KEEP_QT_PLUGINS: dict[str, frozenset[str]] = {
    "platforms": frozenset(
        {"qxcb", "qwayland", "qwayland-egl", "qoffscreen", "qminimal", "qcocoa", "qwindows"}
    ),
    "platformthemes": frozenset({"qxdgdesktopportal"}),
    "platforminputcontexts": frozenset(
        {"composeplatforminputcontextplugin", "ibusplatforminputcontextplugin"}
    ),
    "imageformats": frozenset({"qsvg", "qico"}),
    "iconengines": frozenset({"qsvgicon"}),
    "styles": frozenset({"qmacstyle", "qmodernwindowsstyle", "qwindowsvistastyle"}),
    "xcbglintegrations": frozenset({"qxcb-glx-integration", "qxcb-egl-integration"}),
    "wayland-shell-integration": frozenset({"xdg-shell"}),
    "wayland-decoration-client": frozenset({"bradient"}),
    "wayland-graphics-integration-client": frozenset({"qt-plugin-wayland-egl"}),
}

# Modules that hooks or optional imports would drag in and the app never imports.
EXCLUDES: tuple[str, ...] = (
    "tkinter", "unittest", "pydoc_data", "IPython", "matplotlib", "pandas", "scipy", "torch",
    "transformers", "mistral_common", "pytest", "hypothesis", "PIL", "Cython", "cython", "pygments",
    "pydantic", "pydantic_core", "jinja2", "markupsafe", "click", "typer", "rich", "trio", "setuptools",
    "cryptography", "OpenSSL", "sqlite3",
    "PySide6.QtQml", "PySide6.QtQuick", "PySide6.QtQuickWidgets", "PySide6.QtPdf",
    "PySide6.QtWebEngineCore", "PySide6.QtWebEngineWidgets", "PySide6.QtWebChannel", "PySide6.QtMultimedia",
    "PySide6.Qt3DCore", "PySide6.QtOpenGL", "PySide6.QtOpenGLWidgets", "PySide6.QtPrintSupport",
    "PySide6.QtDBus", "PySide6.QtSql", "PySide6.QtTest", "PySide6.QtDesigner", "PySide6.QtCharts",
)  # fmt: skip


def qt_plugin_name(file_name: str) -> str:
    """``libqxcb.so`` -> ``qxcb``, ``qwindows.dll`` -> ``qwindows``, ``libqcocoa.dylib`` -> ``qcocoa``."""
    return re.sub(r"^lib", "", file_name.split(".")[0])


def keep_qt_plugin(plugin_type: str, file_name: str) -> bool:
    return qt_plugin_name(file_name) in KEEP_QT_PLUGINS.get(plugin_type, frozenset())


def _split_library_name(name: str) -> tuple[str, int] | None:
    """``libggml.so.0.20.2`` -> (``libggml``, 3), ``libggml.0.dylib`` -> (``libggml``, 1), else None."""
    match = re.match(r"^(.+?)\.so((?:\.\d+)*)$", name) or re.match(r"^(.+?)((?:\.\d+)*)\.dylib$", name)
    if match is None:
        return None
    return match[1], match[2].count(".")


def is_runtime_library(name: str, siblings: set[str]) -> bool:
    """Whether to bundle the library file ``name`` found beside ``siblings``.

    Keep DLLs, and of ``libX.so``/``libX.so.0``/``libX.so.0.20.2`` (``libX.dylib``/``libX.0.dylib``/
    ``libX.0.20.2.dylib``) only the soname, the one the loader opens: wheels hold copies, not symlinks,
    so the others would be dead weight. A library without a soname copy (a backend built as a loadable
    module, ``libggml-cpu-haswell.so``) is kept as it is.
    """
    if name.endswith(".dll"):
        return True
    parts = _split_library_name(name)
    if parts is None:
        return False
    base, n_version = parts
    if n_version == 1:
        return True
    versions = {_split_library_name(s) for s in siblings}
    if (base, 1) in versions:
        return False
    return n_version == 0 or (base, 0) not in versions
