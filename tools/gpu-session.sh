#!/usr/bin/env bash
# One device call of measurements, from the folders tools/gpu-pack.sh (.gpu/bin, .gpu/tests,
# .gl), tools/python-pack.sh (.gpu/python) and, for `compare`, .gpu/old-bin fill. PART:
#   tests     every library suite on the GPU (gpu-bench.sh tests)     -> $OUT/tests/
#   smoe-rd   the .smc rate-distortion run (tools/smoe-rd.sh)         -> $OUT/smoe-rd/
#   python    tessera.mad_batch against `mad batch`, pyiqa's MAD      -> $OUT/python/
#   compare   `bench` of every workload, old / new / old binaries     -> $OUT/compare/
#   env       what the machine has (MPI, Pillow's codecs)             -> stdout
#   composite-lib  the C library against IceT, every strategy at 2-8 ranks
#             (tools/gpu-composite-lib.sh; .gpu-lib and .gpu-icet)   -> $OUT/composite-lib/lib.jsonl
#   python-mpi     tessera.composite.Compositor under mpirun at 4K   -> $OUT/python-mpi/
#   mad-tiled      mad score whole and in tiles under a budget       -> $OUT/mad-tiled/
# Each part has its own time limit (PART_LIMIT seconds, default 240) and runs even if one
# before it failed; what finished comes back.
#   run(carry: [".gl", ".gpu"], command: "bash tools/gpu-session.sh tests smoe-rd python")
set -uo pipefail
cd "$(dirname "$0")/.."
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json TESSERA_VALIDATION=0 PYTHONUNBUFFERED=1
ROOT=${OUT:-/tmp/out}
limit=${PART_LIMIT:-240}
cp tools/gpu-bench.sh tools/gpu-features.sh tools/gpu-composite-mpi.sh tools/bench-compare.sh tools/bench-python.sh .gpu/
for part in "$@"; do
  echo "== $part ($(date +%T))"
  export OUT=$ROOT/$part; mkdir -p "$OUT"
  case $part in
    tests) BENCH_TIMEOUT=$limit bash .gpu/gpu-bench.sh tests ;;
    smoe-rd) timeout "$limit" bash tools/smoe-rd.sh --time-limit $((limit - 20)) ;;
    python) timeout "$limit" bash .gpu/bench-python.sh ;;
    compare) BENCH_TIMEOUT=$limit bash .gpu/bench-compare.sh ${COMPARE_SETS:-} ;;
    composite-lib) FRAMES=${FRAMES:-6} timeout "$limit" bash tools/gpu-composite-lib.sh > "$OUT/lib.jsonl" 2> "$OUT/lib.err"; tail -5 "$OUT/lib.err" ;;
    python-mpi) bash tools/gpu-python-mpi.sh ;;
    mad-tiled) timeout "$limit" bash tools/gpu-mad-tiled.sh ;;
    env) which mpirun mpicc; python3 -c 'import PIL.features as f; print({k: f.check(k) for k in ["jpg", "jpg_2000", "webp", "avif"]})'; nvidia-smi -L ;;
    *) echo "unknown part $part" ;;
  esac
  echo "== $part: rc=$? ($(date +%T))"
done
