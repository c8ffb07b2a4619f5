#!/usr/bin/env bash
# The README's test command: install the package with its test extras (builds the C++ engine),
# check lint, run the default test suite. Long benchmarks are not part of it.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q --upgrade pip
python3 -m pip install -q ".[test]"
python3 -m ruff check .
export QT_QPA_PLATFORM=offscreen
# pytest exits 5 when it collects no test: treat that as a failure too.
python3 -m pytest -q
