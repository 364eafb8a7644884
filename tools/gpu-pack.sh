#!/usr/bin/env bash
# Packages Tessera for an NVIDIA machine that has no Rust toolchain: release binaries, the
# benchmark driver and the Vulkan loader .deb go into .gpu/ and .gl/ (both git-ignored).
# Then one device call runs the whole benchmark set there:
#   run(carry: [".gl", ".gpu"], command: "bash .gpu/gpu-bench.sh [SET ...]")
# SET: gpu-info prims mad smoe mosaic composite lightfield (default: all), sweep,
# composite-sweep (the encoder's configurations), and
# composite-mpi (one rank per GPU, with IceT when a .gpu-icet bundle is carried too). Results come back
# under $OUT as JSON lines, one file per set.
set -euo pipefail
cd "$(dirname "$0")/.."
# A target folder of its own, so a release build never waits on (or invalidates) debug builds.
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target-release}
cargo build --release --workspace --bins
mkdir -p .gpu/bin
for b in gpu-info sweep prims-bench mad smoe mosaic composite lightfield; do
  if [ -x "$CARGO_TARGET_DIR/release/$b" ]; then cp "$CARGO_TARGET_DIR/release/$b" .gpu/bin/; fi
done
cp tools/gpu-bench.sh tools/gpu-composite-mpi.sh .gpu/
# The Vulkan loader, plus the GL vendor-neutral dispatch libraries: without libglvnd the NVIDIA
# ICD (libGLX_nvidia) cannot hand out vkCreateInstance ("Found no drivers").
if ! ls .gl/libglvnd0_*.deb >/dev/null 2>&1; then
  mkdir -p .gl /tmp/amd64/partial
  o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
  apt-get $o update -qq
  (cd .gl && apt-get $o download libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2)
fi
du -sh .gpu .gl
