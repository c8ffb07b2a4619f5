#!/usr/bin/env bash
# System packages Captionist needs on Debian/Ubuntu: a C++ toolchain for the engine, PortAudio
# (sounddevice), libsndfile, Qt's X11/EGL libraries, the Vulkan SDK and loader (ggml's Vulkan
# backend: glslc and headers to build, libvulkan1 to run) with Mesa's drivers (lavapipe gives the
# tests a Vulkan device without a GPU), and for the tests espeak-ng, PulseAudio and Xvfb.
# Elsewhere it only prints what to install.
set -euo pipefail
PACKAGES=(
  build-essential cmake ninja-build
  libportaudio2 libasound2-plugins libsndfile1
  libgl1 libegl1 libxkbcommon0 libxkbcommon-x11-0 libfontconfig1 libdbus-1-3 libglib2.0-0
  libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1 libxcb-shape0 libxcb-xinerama0 libxcb-randr0
  libxcb-render-util0 libxcb-image0
  libvulkan1 libvulkan-dev glslc mesa-vulkan-drivers
  espeak-ng pulseaudio pulseaudio-utils xvfb x11-utils
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
