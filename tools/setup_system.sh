#!/usr/bin/env bash
# System packages Captionist needs on Debian/Ubuntu: a C++ toolchain for the engine, PortAudio
# (sounddevice), libsndfile, Qt's X11/EGL libraries, the Vulkan SDK and loader (ggml's Vulkan
# backend: glslc, Vulkan and SPIR-V headers to build, libvulkan1 to run) with Mesa's drivers (lavapipe gives the
# tests a Vulkan device without a GPU), and for the tests espeak-ng, PulseAudio, Xvfb, openbox with
# xdotool (the X11 global-shortcut test: a window manager to focus another window, and typed keys),
# dbus-daemon (the Wayland shortcut tests run a private session bus with a fake desktop portal),
# Chromium (the caption page test opens the page in a real browser while a session runs) and AT-SPI
# with its Python bindings (the screen reader test reads the app's accessibility tree as Orca does).
# Elsewhere it only prints what to install.
set -euo pipefail
PACKAGES=(
  build-essential cmake ninja-build
  libportaudio2 libasound2-plugins libsndfile1
  libgl1 libegl1 libxkbcommon0 libxkbcommon-x11-0 libfontconfig1 libdbus-1-3 libglib2.0-0
  libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1 libxcb-shape0 libxcb-xinerama0 libxcb-randr0
  libxcb-render-util0 libxcb-image0
  libvulkan1 libvulkan-dev glslc spirv-headers mesa-vulkan-drivers
  espeak-ng pulseaudio pulseaudio-utils xvfb x11-utils openbox xdotool dbus-daemon chromium
  at-spi2-core python3-gi gir1.2-atspi-2.0
)
if ! command -v apt-get >/dev/null 2>&1; then
  echo "setup_system: not a Debian/Ubuntu system; install the equivalents of: ${PACKAGES[*]}" >&2
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "setup_system: run as root (or install sudo) to install: ${PACKAGES[*]}" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${PACKAGES[@]}" >/dev/null

# Debian 12's Mesa 22.3 lavapipe crashes inside its own worker threads on ggml's Vulkan shaders
# (a segfault in libvulkan_lvp.so on the first tiny Voxtral model); bookworm-backports' Mesa 25 runs
# them. Only the Vulkan drivers come from backports.
if grep -qs '^VERSION_CODENAME=bookworm' /etc/os-release; then
  if ! grep -rqs bookworm-backports /etc/apt/sources.list /etc/apt/sources.list.d/; then
    echo "deb http://deb.debian.org/debian bookworm-backports main" | $SUDO tee /etc/apt/sources.list.d/backports.list >/dev/null
    $SUDO apt-get update -qq
  fi
  $SUDO apt-get install -y -qq --no-install-recommends -t bookworm-backports mesa-vulkan-drivers >/dev/null
fi

# ggml's Vulkan backend needs Vulkan-Hpp headers of 1.3.261 or later (VK_EXT_layer_settings);
# Debian 12 ships 1.3.239. Then the headers alone of Debian 13's libvulkan-dev are unpacked into
# /opt/captionist-vulkan-headers (nothing is installed over the system's), where
# tools/install_ggml.sh finds them.
VK_HEADERS=/opt/captionist-vulkan-headers
VK_DEB=pool/main/v/vulkan-loader/libvulkan-dev_1.4.309.0-1_amd64.deb
if ! grep -qs LayerSettingEXT /usr/include/vulkan/vulkan_structs.hpp && [ ! -f "$VK_HEADERS/include/vulkan/vulkan.hpp" ] &&
   [ "$(dpkg --print-architecture)" = amd64 ]; then
  tmp=$(mktemp -d)
  if python3 -c "import sys, urllib.request; urllib.request.urlretrieve(sys.argv[1], sys.argv[2])" \
       "http://deb.debian.org/debian/$VK_DEB" "$tmp/vk.deb" 2>/dev/null; then
    dpkg-deb -x "$tmp/vk.deb" "$tmp/x"
    $SUDO mkdir -p "$VK_HEADERS"
    $SUDO cp -r "$tmp/x/usr/include" "$VK_HEADERS/"
  else
    echo "setup_system: could not fetch newer Vulkan headers; ggml will be built without Vulkan" >&2
  fi
  rm -rf "$tmp"
fi
