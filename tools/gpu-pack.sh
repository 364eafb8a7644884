#!/usr/bin/env bash
# Packages Tessera for an NVIDIA machine that has no Rust toolchain: release binaries, the
# benchmark driver and the Vulkan loader .deb go into .gpu/ and .gl/ (both git-ignored).
# Then one device call runs the whole benchmark set there:
#   run(carry: [".gl", ".gpu"], command: "bash .gpu/gpu-bench.sh [SET ...]")
# SET: gpu-info prims mad smoe mosaic composite lightfield (default: all), sweep,
# composite-sweep (the encoder's shapes), tests (the library test suites on the GPU;
# their output is libtest's text), and composite-mpi (one rank per GPU, with IceT when a
# .gpu-icet bundle is carried too), and the feature sets of tools/gpu-features.sh
# (smoe-photos, mosaic-exact, lightfield-files). Results come back under $OUT.
set -euo pipefail
cd "$(dirname "$0")/.."
# A target folder of its own, so a release build never waits on (or invalidates) debug builds.
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target-release}
cargo build --release --workspace --bins
mkdir -p .gpu/bin
for b in gpu-info sweep prims-bench mad smoe mosaic composite lightfield; do
  if [ -x "$CARGO_TARGET_DIR/release/$b" ]; then cp "$CARGO_TARGET_DIR/release/$b" .gpu/bin/; fi
done
cp tools/gpu-bench.sh tools/gpu-features.sh tools/gpu-composite-mpi.sh .gpu/
# The library test suites (and MAD's GPU-against-CPU tests), stripped, for the `tests` set:
# every kernel's checks against its CPU reference, on the GPU instead of lavapipe.
rm -rf .gpu/tests && mkdir -p .gpu/tests
cargo test --release --workspace --no-run --message-format=json 2>/dev/null | python3 -c '
import json, shutil, sys
for line in sys.stdin:
    m = json.loads(line)
    t = m.get("target", {})
    if m.get("reason") == "compiler-artifact" and m.get("executable") and (
            "lib" in t.get("kind", []) or t.get("name") == "gpu_vs_cpu"):
        shutil.copy(m["executable"], ".gpu/tests/" + m["package_id"].split("#")[-1].split("@")[0].split("/")[-1] + "-" + t["name"])
'
strip .gpu/tests/*
# The Vulkan loader, plus the GL vendor-neutral dispatch libraries: without libglvnd the NVIDIA
# ICD (libGLX_nvidia) cannot hand out vkCreateInstance ("Found no drivers").
if ! ls .gl/libglvnd0_*.deb >/dev/null 2>&1; then
  mkdir -p .gl /tmp/amd64/partial
  o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
  apt-get $o update -qq
  (cd .gl && apt-get $o download libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2)
fi
du -sh .gpu .gl
