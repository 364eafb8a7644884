#!/usr/bin/env bash
# One device call: the GPU encode and decode of 8x8x9x9 DCT patches (8x8 pixels of the whole
# 9x9 view grid, 62 KB a patch: over a workgroup's 48 KB of shared memory, so the kernels keep
# the patch tensor in a device buffer) against the CPU backend, on a generated 9x9 x 512x512
# light field and on the rendered scenes in .gpu-data/lf/ (HCI folders, when carried); then
# the Table 1 bench (`lightfield bench --encode-only`, the shared-memory kernels).
# Needs .gl and .gpu/bin (tools/gpu-pack.sh; B=<folder> for other binaries).
#   run(carry: [".gl", ".gpu", ".gpu-data"], command: "bash tools/gpu-lf-wide.sh")
# Writes $OUT/wide.jsonl, one line per input, backend, step and epsilon ({"input", "backend",
# "step", "epsilon", "record": the command's JSON record}), and $OUT/table1.jsonl.
set -uo pipefail
cd "$(dirname "$0")/.."
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TESSERA_VALIDATION=0
OUT=${OUT:-/tmp/out}; W=/tmp/lf-wide; mkdir -p "$OUT" "$W"
bin=${B:-.gpu/bin}/lightfield
$bin generate --out "$W/synth.npy" --views 9x9 --size 512x512 --seed 1 --json > /dev/null
$bin train --dct --patch 8x8x9x9 --out "$W/dct.lfd" --backend cpu --json > /dev/null
line() { # input, backend, step, epsilon, command...
  local input=$1 backend=$2 step=$3 eps=$4; shift 4
  local rec; rec=$(timeout "${STEP_TIMEOUT:-240}" "$@" 2> "$W/err" | tail -1)
  [ -n "$rec" ] || { rec=null; tail -3 "$W/err"; }
  echo "{\"input\": \"$input\", \"backend\": \"$backend\", \"step\": \"$step\", \"epsilon\": $eps, \"record\": $rec}" \
    | tee -a "$OUT/wide.jsonl"
}
for input in "$W/synth.npy" .gpu-data/lf/*/; do
  [ -e "$input" ] || continue
  for backend in gpu cpu; do
    for eps in 0.07 0.025; do
      lfc="$W/$(basename "$input").$backend.$eps.lfc"
      line "$input" $backend encode $eps $bin encode --input "$input" --dict "$W/dct.lfd" --sparsity 11664 \
        --epsilon $eps --out "$lfc" --backend $backend --json
      line "$input" $backend decode $eps $bin decode "$lfc" --out "$W/back.npy" --backend $backend --json
      rm -f "$W/back.npy"
    done
  done
done
timeout "${STEP_TIMEOUT:-240}" $bin bench --encode-only > "$OUT/table1.jsonl" 2> "$OUT/table1.err"
echo "== table1: rc=$?"; tail -3 "$OUT/table1.err"; tail -c 3000 "$OUT/table1.jsonl"
