#!/usr/bin/env bash
# ggml for Captionist, built from the pinned libggml-python source distribution (no vendored copy):
# its backends as loadable modules (GGML_BACKEND_DL) with one CPU backend per instruction-set level
# (GGML_CPU_ALL_VARIANTS: SSE4.2 ... AVX2, AVX-512, VNNI, BF16, AMX; the best one for the CPU is
# picked when the engine starts) and llamafile's matrix kernels. The prebuilt wheel on PyPI is one
# AVX2 build without them. Skipped when that build is installed already (CAPTIONIST_GGML_REBUILD=1
# forces it). The Vulkan backend is built too when its SDK is there (glslc and the Vulkan headers:
# Debian glslc, libvulkan-dev and spirv-headers, tools/setup_system.sh); CAPTIONIST_GGML_VULKAN=0 leaves it out, =1
# requires it. It loads only where a Vulkan driver is installed and is skipped quietly elsewhere.
# Extra CMake defines (e.g. -DGGML_CUDA=ON) can be passed in CAPTIONIST_GGML_CMAKE_ARGS.
# Takes 5-10 minutes on 2 cores, once (about 10 more with Vulkan's shaders).
set -euo pipefail
PY=${PYTHON:-python3}
VERSION=$(sed -n 's/.*"libggml-python==\([^"]*\)".*/\1/p' "$(dirname "$0")/../pyproject.toml" | head -n 1)
VULKAN=${CAPTIONIST_GGML_VULKAN:-auto}
# Vulkan-Hpp headers new enough for ggml (1.3.261+): the SDK's, the system's, or the ones
# tools/setup_system.sh unpacks where the system's are older (Debian 12)
VK_INCLUDE=""
if [ -n "${VULKAN_SDK:-}" ]; then
  VK_OK=1
elif grep -qs LayerSettingEXT /usr/include/vulkan/vulkan_structs.hpp; then
  VK_OK=1
elif [ -f /opt/captionist-vulkan-headers/include/vulkan/vulkan.hpp ] && [ -f /usr/include/vulkan/vulkan.h ]; then
  VK_OK=1
  VK_INCLUDE=/opt/captionist-vulkan-headers/include
else
  VK_OK=0
fi
if [ "$VULKAN" = auto ]; then
  if [ "$VK_OK" = 1 ] && command -v glslc >/dev/null 2>&1 && { [ -n "${VULKAN_SDK:-}" ] || [ -d /usr/share/cmake/SPIRV-Headers ]; }; then
    VULKAN=1
  else
    VULKAN=0
  fi
fi
have_variants() {
  "$PY" - "$VERSION" "$VULKAN" <<'PY'
import pathlib, sys
from importlib import metadata
try:
    if metadata.version("libggml-python") != sys.argv[1]:
        sys.exit(1)
    import libggml
except Exception:
    sys.exit(1)
root = pathlib.Path(libggml.__file__).parent
ok = any(root.glob("lib*/*ggml-cpu-*"))
if sys.argv[2] == "1":
    ok = ok and any(root.glob("lib*/*ggml-vulkan*"))
sys.exit(0 if ok else 1)
PY
}
if [ "${CAPTIONIST_GGML_REBUILD:-0}" != 1 ] && have_variants; then
  exit 0
fi
EXTRA=""
WHAT="runtime CPU dispatch"
if [ "$VULKAN" = 1 ]; then
  EXTRA="-DGGML_VULKAN=ON"
  if [ -n "$VK_INCLUDE" ]; then EXTRA="$EXTRA -DVulkan_INCLUDE_DIR=$VK_INCLUDE"; fi
  WHAT="$WHAT and Vulkan"
fi
echo "install_ggml: building ggml ${VERSION} from source with ${WHAT} (once; 5-20 minutes)" >&2
JOBS=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
CMAKE_ARGS="-DGGML_BACKEND_DL=ON -DGGML_CPU_ALL_VARIANTS=ON -DGGML_NATIVE=OFF -DGGML_LLAMAFILE=ON ${EXTRA} ${CAPTIONIST_GGML_CMAKE_ARGS:-}" \
CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$JOBS} \
  "$PY" -m pip install -q --no-cache-dir --force-reinstall --no-deps --no-binary libggml-python "libggml-python==${VERSION}"
have_variants || { echo "install_ggml: the build did not install the CPU variants (or the Vulkan backend it was asked for)" >&2; exit 1; }
