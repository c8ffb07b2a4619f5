#!/usr/bin/env bash
# The README's test command: system packages, ggml (built once from source: tools/install_ggml.sh),
# the package with its test extras (builds the C++ engine), lint and format checks, then the default
# test suite (long benchmarks are not part of it).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup_system.sh
python3 -m pip install -q --upgrade pip
bash tools/install_ggml.sh   # ggml with runtime CPU dispatch (once)
python3 -m pip install -q ".[test]"
python3 -m ruff check .
python3 -m ruff format --check .
export QT_QPA_PLATFORM=offscreen
# pytest exits 5 when it collects no test; with `set -e` that fails the run too.
python3 -m pytest -q
