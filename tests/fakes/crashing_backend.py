"""A ggml backend module whose driver crashes the process when it starts, as a broken GPU driver does
inside ``vkCreateInstance``, and a folder of modules to load it from (``CAPTIONIST_GGML_MODULES``).

Usage::

    folder = module_folder(tmp_path, crashing="vulkan")   # this build's CPU modules + a crashing one

Built with the C compiler the engine is built with; tests skip where there is none.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SOURCE = r"""
#include <signal.h>
#include <stddef.h>
/* ggml's loader calls this when it loads the module: the driver starts here */
void * ggml_backend_init(void) { raise(SIGSEGV); return NULL; }
"""


def ggml_lib_dir() -> Path:
    import libggml

    root = Path(libggml.__file__).parent
    return next(d for d in (root / n for n in ("lib64", "lib")) if d.is_dir())


def module_folder(folder: Path, *, crashing: str | None = None, real: tuple[str, ...] = ()) -> Path:
    """``folder`` with links to this ggml build's CPU modules (none in a linked build) and its
    ``real`` GPU modules, and a module named ``crashing`` that raises SIGSEGV when loaded."""
    if not sys.platform.startswith("linux"):
        pytest.skip("built as a Linux shared object")
    compiler = shutil.which("cc") or shutil.which("gcc")
    if crashing and compiler is None:
        pytest.skip("no C compiler to build the crashing module")
    folder.mkdir(parents=True, exist_ok=True)
    lib = ggml_lib_dir()
    for module in [*lib.glob("libggml-cpu-*.so"), *(lib / f"libggml-{name}.so" for name in real)]:
        if not module.exists():
            pytest.skip(f"this ggml build has no {module.name}")
        (folder / module.name).symlink_to(module)
    if crashing:
        source = folder / "crash.c"
        source.write_text(SOURCE)
        subprocess.run(
            [compiler, "-shared", "-fPIC", "-o", str(folder / f"libggml-{crashing}.so"), str(source)],
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip
        source.unlink()
    return folder
