#!/usr/bin/env bash
# Runs on the GPU machine (see tools/gpu-pack.sh): unpacks the Vulkan loader, then each named
# benchmark set, writing <set>.jsonl and <set>.err, packed into $OUT/results.tar.gz (the
# device tool brings back at most 8 files, re-packed after every set so that a call cut short
# still returns what finished). Every set runs even if one fails.
# B=<folder of binaries> and TAG=<suffix> run the same sets with other binaries (an earlier
# build, for before/after comparisons) into <set><TAG>.jsonl.
set -uo pipefail
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export TESSERA_VALIDATION=0
OUT=${OUT:-/tmp/out}; RES=/tmp/tessera-results; mkdir -p "$OUT" "$RES"
B=${B:-.gpu/bin}; TAG=${TAG:-}
sets=("$@"); [ ${#sets[@]} -gt 0 ] || sets=(gpu-info prims mad smoe mosaic composite lightfield)
run() { # name, command...
  local name=$1$TAG; shift
  echo "== $name: $*"
  local t0=$(date +%s%N)
  timeout "${BENCH_TIMEOUT:-300}" "$@" >"$RES/$name.jsonl" 2>"$RES/$name.err"; local rc=$?
  echo "== $name: rc=$rc $(( ($(date +%s%N) - t0) / 1000000 )) ms"; tail -3 "$RES/$name.err"; tail -c 1500 "$RES/$name.jsonl"
}
for s in "${sets[@]}"; do
  case $s in
    gpu-info) run gpu-info $B/gpu-info --json ;;
    prims) run prims $B/prims-bench --json ;;
    # The copy ceiling, the scan's grid (workgroup x elements per invocation) at 2^24 and
    # 2^28, then --tune into a tuning file of this run that prims-bench reads, so its scan line
    # is the tuned shape at 2^28 (the 80%-of-copy goal). tuning.json comes back in the tarball.
    sweep)
      run sweep $B/sweep --kernel copy --sizes 1M,16M,64M --out "$RES/sweep" --json
      run sweep-scan $B/sweep --kernel engine.scan --param workgroup=128,256,512,1024 \
        --param items=4,8,12,16,24,32 --sizes 16M,256M --out "$RES/sweep-scan" --json
      export TESSERA_TUNING=$RES/tuning.json
      run tune-scan $B/sweep --tune --kernel engine.scan --json
      run prims-tuned $B/prims-bench --json
      unset TESSERA_TUNING ;;
    mad|smoe|mosaic|composite|lightfield) run "$s" $B/$s bench ;;
    composite-mpi) run composite-mpi bash .gpu/gpu-composite-mpi.sh ;;
    composite-sweep) run composite-sweep $B/sweep --kernel composite.encode --param workgroup=128,256,512,1024 \
        --param per_lane=32,64 --param batch=4,8,16 --out "$RES/composite-sweep" --json ;;
    # User-level measurements of the feature issues (tools/gpu-features.sh).
    smoe-photos|smoe-large|mosaic-exact|mosaic-costs|lightfield-files) B=$B RES=$RES bash .gpu/gpu-features.sh "$s" ;;
    # Each suite on the GPU; output is text (libtest's), one file per suite.
    tests) for t in .gpu/tests/*; do run "test-$(basename "$t")" "$t" --test-threads=4; done ;;
    *) echo "unknown set $s" ;;
  esac
  tar czf "$OUT/results.tar.gz" -C "$RES" .
done
