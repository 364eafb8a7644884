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
#   smoe-refine    the refinement step per pass and default fits of photos
#             (tools/gpu-smoe-refine.sh; SMOE_BINS, STEPS)            -> $OUT/smoe-refine/
#   lf-rd          tools/lfrd.py on the light fields in .gpu-data/lf/ (HCI folders):
#             .lfc, .smc, JPEG per view, and x265 where ffmpeg has it  -> $OUT/lf-rd/
#   mosaic-costs   the exact solvers beside scipy and HyLAC (tools/hylac-stage.sh staged
#             .gpu/hylac; COSTS_SIZES)                                -> $OUT/mosaic-costs/
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
    smoe-refine) timeout "$limit" bash tools/gpu-smoe-refine.sh ;;
    lf-rd) x265=(); ffmpeg -hide_banner -encoders 2>/dev/null | grep -q libx265 || { x265=(--no-x265); echo "no ffmpeg with libx265: x265 left out"; }
      timeout "$limit" python3 tools/lfrd.py --lightfield .gpu/bin/lightfield --smoe .gpu/bin/smoe --backend gpu \
        --dictionaries 4 --max-patches 3000 --iterations 2 "${x265[@]}" $(for d in .gpu-data/lf/*/; do echo --scene "$d"; done) $(for o in ${LF_ONLY:-}; do echo --only "$o"; done) \
        --work /tmp/lfrd --json "$OUT/rd.jsonl" --plot "$OUT/rd.png" 2>&1 | tail -5 ;;
    mosaic-costs) RES=$OUT STEP_TIMEOUT=$limit bash .gpu/gpu-features.sh mosaic-costs ;;
    env) which mpirun mpicc; python3 -c 'import PIL.features as f; print({k: f.check(k) for k in ["jpg", "jpg_2000", "webp", "avif"]})'; nvidia-smi -L ;;
    *) echo "unknown part $part" ;;
  esac
  echo "== $part: rc=$? ($(date +%T))"
done
