#!/usr/bin/env bash
# One device call for the light-field entropy coder (`.lfc` version 3) on the GPU machine:
# 1. `lightfield bench` at the paper's Table 1 size with the previous build (version 2,
#    zstd sections) and this one, old / new / old (tools/bench-compare.sh): encode kernels,
#    the encode to .lfc bytes, the decode to device memory, bits per sample;
# 2. the section coder alone at Table 1 size on the host's CPU (the ignored test
#    `table_1_section_coding_time` of the lightfield library: code and decode times).
#
# Prepare (on the build machine, from the project root):
#   bash tools/gpu-pack.sh                       # this checkout -> .gpu/bin, .gpu/tests, .gl
#   git worktree add /tmp/tessera-old main      # the previous coder
#   (cd /tmp/tessera-old && CARGO_TARGET_DIR=target-release cargo build --release -p tessera-lightfield --bin lightfield)
#   mkdir -p .gpu/old-bin && cp /tmp/tessera-old/target-release/release/lightfield .gpu/old-bin/
#   cp tools/bench-compare.sh tools/lf-entropy-gpu.sh .gpu/
#   strip .gpu/bin/* .gpu/old-bin/*; find .gpu/tests -type f ! -name 'tessera-lightfield-*' -delete   # within 64 MiB
# Run:
#   run(carry: [".gl", ".gpu"], command: "bash .gpu/lf-entropy-gpu.sh")
# Results: $OUT/compare.txt and $OUT/results.tar.gz (step 1), $OUT/table1-sections.txt (step 2).
set -uo pipefail
cd "$(dirname "$0")/.."
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TESSERA_VALIDATION=0
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
BENCH_TIMEOUT=${BENCH_TIMEOUT:-240} bash .gpu/bench-compare.sh lightfield
for t in .gpu/tests/tessera-lightfield-*; do
  [ -x "$t" ] && "$t" --ignored --nocapture table_1 2>&1 | grep -E "coefficients|test result" >> "$OUT/table1-sections.txt"
done
cat "$OUT/compare.txt" "$OUT/table1-sections.txt" 2>/dev/null
