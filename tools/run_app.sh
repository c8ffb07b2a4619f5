#!/usr/bin/env bash
# The README's run command: system packages, ggml (built once from source: tools/install_ggml.sh), the
# package (builds the C++ engine), then the app.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup_system.sh
bash tools/install_ggml.sh   # ggml with runtime CPU dispatch (once)
python3 -m pip install -q .
exec captionist "$@"
