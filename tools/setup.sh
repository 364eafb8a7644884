#!/usr/bin/env bash
# Installs every system package Tessera needs on Debian 12. Idempotent: packages already
# present are skipped by apt, and the Rust toolchain is only checked, never replaced.
set -euo pipefail

packages=(
  # Vulkan loader, headers, the CPU device (lavapipe) and validation layers
  libvulkan1 libvulkan-dev vulkan-tools mesa-vulkan-drivers vulkan-validationlayers
  # shaderc linked against Debian's static libraries (see .cargo/config.toml)
  libshaderc-dev glslang-dev glslang-tools spirv-tools
  # viewer: X11 libraries winit opens at run time, and a virtual display for tests
  xvfb xauth libx11-6 libx11-xcb1 libxcursor1 libxrandr2 libxi6 libxkbcommon-x11-0
  # MPI for the distributed compositor (bindgen needs libclang)
  libopenmpi-dev openmpi-bin libclang-dev
  # build helpers
  pkg-config cmake
  # a font for sweep plots
  fonts-dejavu-core
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

command -v cargo >/dev/null || { echo "setup.sh: cargo not found; install Rust with rustup" >&2; exit 1; }
echo "setup.sh: system packages ready"
