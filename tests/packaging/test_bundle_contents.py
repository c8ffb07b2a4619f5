"""packaging/bundle_contents.py: which Qt plugins, libraries and modules the installers carry."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from bundle_contents import EXCLUDES, KEEP_QT_PLUGINS, is_runtime_library, keep_qt_plugin


@pytest.mark.parametrize(
    ("kind", "file_name"),
    [
        ("platforms", "libqxcb.so"),
        ("platforms", "libqwayland.so"),
        ("platforms", "libqoffscreen.so"),
        ("platforms", "libqcocoa.dylib"),
        ("platforms", "qwindows.dll"),
        ("imageformats", "libqsvg.so"),
        ("imageformats", "qico.dll"),
        ("iconengines", "libqsvgicon.dylib"),
        ("styles", "qmodernwindowsstyle.dll"),
        ("styles", "libqmacstyle.dylib"),
        ("platforminputcontexts", "libibusplatforminputcontextplugin.so"),
        ("wayland-shell-integration", "libxdg-shell.so"),
    ],
)
def test_keeps_what_a_widgets_app_needs(kind: str, file_name: str) -> None:
    assert keep_qt_plugin(kind, file_name)


@pytest.mark.parametrize(
    ("kind", "file_name"),
    [
        ("platforminputcontexts", "libqtvirtualkeyboardplugin.so"),  # pulls in QtQuick and QML
        ("imageformats", "libqpdf.so"),  # QtPdf
        ("imageformats", "libqjpeg.so"),
        ("platformthemes", "libqgtk3.so"),  # GTK, cairo, pango from the build machine
        ("platforms", "libqeglfs.so"),
        ("platforms", "libqvnc.so"),
        ("multimedia", "libffmpegmediaplugin.so"),
        ("sqldrivers", "libqsqlite.so"),
        ("tls", "libqopensslbackend.so"),
    ],
)
def test_drops_the_rest(kind: str, file_name: str) -> None:
    assert not keep_qt_plugin(kind, file_name)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="checks the Linux PySide6 wheel")
def test_the_kept_linux_plugins_exist_in_pyside6() -> None:
    """A PySide6 update that renames a plugin must not silently leave the bundle without it."""
    import PySide6

    plugins = Path(PySide6.__file__).parent / "Qt" / "plugins"
    for kind, name in [
        ("platforms", "qxcb"),
        ("platforms", "qoffscreen"),
        ("platforms", "qwayland"),
        ("imageformats", "qsvg"),
        ("iconengines", "qsvgicon"),
        ("platforminputcontexts", "composeplatforminputcontextplugin"),
        ("wayland-shell-integration", "xdg-shell"),
    ]:
        assert name in KEEP_QT_PLUGINS[kind]
        assert (plugins / kind / f"lib{name}.so").is_file(), f"{kind}/lib{name}.so"


def test_one_copy_of_each_library() -> None:
    linux = {"libggml.so", "libggml.so.0", "libggml.so.0.20.2", "libggml-cpu-haswell.so", "libfoo.so.1.2"}
    assert sorted(n for n in linux if is_runtime_library(n, linux)) == [
        "libfoo.so.1.2",
        "libggml-cpu-haswell.so",
        "libggml.so.0",
    ]
    mac = {
        "libggml.dylib",
        "libggml.0.dylib",
        "libggml.0.20.2.dylib",
        "libggml-metal.dylib",
        "libggml-metal.0.dylib",
        "libggml-metal.0.20.2.dylib",
    }
    kept = sorted(n for n in mac if is_runtime_library(n, mac))
    assert kept == ["libggml-metal.0.dylib", "libggml.0.dylib"]
    windows = {"ggml.dll", "ggml-cpu.dll", "ggml.lib"}
    assert sorted(n for n in windows if is_runtime_library(n, windows)) == ["ggml-cpu.dll", "ggml.dll"]


def test_the_app_works_without_the_excluded_modules(tmp_path: Path) -> None:
    """Every module of the package imports, and the model download code runs (offline), with the
    excluded modules made unimportable, as they are in the bundle."""
    blocked = [m for m in EXCLUDES if not m.startswith("PySide6.")]
    code = f"""
import sys, importlib, pkgutil
for name in {blocked!r}:
    sys.modules[name] = None
import captionist
for info in pkgutil.walk_packages(captionist.__path__, "captionist."):
    if not info.name.endswith("__main__"):
        importlib.import_module(info.name)
from huggingface_hub import HfApi, hf_hub_download
from huggingface_hub.errors import LocalEntryNotFoundError
try:
    hf_hub_download("org/model", "config.json", local_files_only=True, cache_dir=sys.argv[1])
except LocalEntryNotFoundError:
    print("ok")
"""
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        env={"QT_QPA_PLATFORM": "offscreen", "HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"},
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().endswith("ok")
