#!/usr/bin/env bash
# Stages HyLAC's source (Kawtikwar and Nagi's GPU Hungarian, github.com/researchgroup-zx93920/HyLAC,
# branch Hung-Hybrid) in .gpu/hylac (git-ignored: its code is never committed here) so one
# device call can build and time it beside ours on the same matrices:
#   bash tools/hylac-stage.sh [CLONE]      CLONE: a clone or bare mirror of that repository
#   bash tools/gpu-pack.sh && bash tools/hylac-stage.sh
#   run(carry: [".gl", ".gpu"], command: "bash .gpu/gpu-bench.sh mosaic-costs")   -> $OUT/results.tar.gz
set -euo pipefail
cd "$(dirname "$0")/.."
src=${1:-/work/.mirror/researchgroup-zx93920+HyLAC/repo}
rm -rf .gpu/hylac && mkdir -p .gpu/hylac
git --git-dir="$src" archive Hung-Hybrid codebase/Hung codebase/Hung-CT 2>/dev/null | tar -x -C .gpu/hylac ||
  git -C "$src" archive Hung-Hybrid codebase/Hung codebase/Hung-CT | tar -x -C .gpu/hylac
cp apps/mosaic/scripts/exact_costs.py .gpu/
echo "staged $(find .gpu/hylac -type f | wc -l) files of HyLAC in .gpu/hylac"
