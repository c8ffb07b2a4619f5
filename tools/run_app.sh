#!/usr/bin/env bash
# The README's run command: system packages, the package (builds the C++ engine), then the app.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup_system.sh
python3 -m pip install -q .
exec captionist "$@"
