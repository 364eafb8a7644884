#!/usr/bin/env bash
# The main job: a demo of the engine and all five workloads, on the sample photos of
# assets/photos (mad, smoe, mosaic, lightfield) and generated point clouds (composite).
# Installs what is missing, builds release binaries, and writes everything to out/:
#   out/gpu-info.jsonl       per device: limits, measured copy bandwidth and FMA rate
#   out/sweep/               copy kernel over workgroup and problem sizes (CSV + PNG)
#   out/<app>/               each workload's images, JSON summary and files
# Each step prints a one-line summary. Runs on a GPU if there is one, else on lavapipe.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
cargo build --release --workspace --bins
mkdir -p out
B=${CARGO_TARGET_DIR:-target}/release
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader OMPI_MCA_plm_rsh_agent=

$B/gpu-info --copy-mib 64 --fma-iterations 512 --json > out/gpu-info.jsonl.tmp && mv out/gpu-info.jsonl.tmp out/gpu-info.jsonl
$B/gpu-info --no-measure
$B/sweep --kernel copy --sizes 64K,1M,4M --workgroups 64,256,1024 --out out/sweep
for app in mad smoe mosaic composite lightfield; do
  $B/$app demo --out out/$app
done
echo "demo: outputs in out/"
