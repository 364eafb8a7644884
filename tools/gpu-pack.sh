#!/usr/bin/env bash
# Packages Tessera for an NVIDIA machine that has no Rust toolchain: release binaries, the
# benchmark driver and the Vulkan loader .deb go into .gpu/ and .gl/ (both git-ignored).
# Then one device call runs the whole benchmark set there:
#   run(carry: [".gl", ".gpu"], command: "bash .gpu/gpu-bench.sh [SET ...]")
# SET: gpu-info prims mad smoe mosaic composite lightfield (default: all). Results come back
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
cp tools/gpu-bench.sh .gpu/
[ -d .gl ] && ls .gl/*.deb >/dev/null 2>&1 || bash ../shared/tools/gpu-carry.sh
du -sh .gpu .gl
