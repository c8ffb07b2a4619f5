"""The engine module lists the shared C++ runtime before libggml (engine/CMakeLists.txt): a libggml
linked with a static libstdc++ exports its private copy, and calls bound there crashed the engine
(seen on a CUDA build: number parsing in default_n_threads, inside a libggml copy of iostreams)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import pytest

from captionist import _engine


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ELF and libstdc++: Linux")
def test_the_cpp_runtime_comes_before_libggml() -> None:
    readelf = shutil.which("readelf")
    if readelf is None:
        pytest.skip("readelf (binutils) is not installed")
    out = subprocess.run([readelf, "-d", _engine.__file__], capture_output=True, text=True, check=True).stdout
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)
    runtime = next(i for i, n in enumerate(needed) if n.startswith("libstdc++"))
    ggml = [i for i, n in enumerate(needed) if n.startswith("libggml")]
    assert ggml, needed
    assert runtime < min(ggml), needed
