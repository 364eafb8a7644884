#!/usr/bin/env bash
# Runs on the GPU machine after tools/gpu-bench.sh has unpacked the loader (same folder
# layout: .gpu/bin, .gl): the user-level measurements of the feature issues, one JSON line
# per step into $RES/<set>.jsonl. Photos for `smoe-photos` come in .gpu-data/ (git-ignored;
# scikit-image's astronaut, chelsea and coffee, which are public domain / CC0).
#   smoe-photos     EM-only against refined fits at about 44 pixels per kernel, and renders
#   smoe-large      photographs of any size: each photo cropped to 3:2 and
#                   resized (PIL) to 768x512 at K=9000 and 2048x1365 at K=70000, default fit;
#                   and the smallest K reaching 32 dB at 768x512 (--psnr 32)
#   mosaic-exact    exact assignment on the GPU and the CPU (and scipy where installed)
#   mosaic-costs    `mosaic bench --costs`: photo, uniform and integer matrices, ours (GPU, CPU)
#                   beside scipy and HyLAC built with nvcc (tools/hylac-stage.sh stages its
#                   source in .gpu/hylac first); COSTS_SIZES overrides the sizes, COSTS_KINDS
#                   the kinds the peers also solve
#   lightfield-files generate, train, encode, decode, one-view decode and a still render
set -uo pipefail
B=${B:-.gpu/bin}
RES=${RES:-/tmp/tessera-results}; mkdir -p "$RES"
W=/tmp/tessera-work; mkdir -p "$W"
step() { # set, name, command...
  local set=$1 name=$2; shift 2
  echo "== $set/$name: $*"
  local t0=$(date +%s%N)
  timeout "${STEP_TIMEOUT:-240}" "$@" >>"$RES/$set.jsonl" 2>>"$RES/$set.err"; local rc=$?
  echo "== $set/$name: rc=$rc $(( ($(date +%s%N) - t0) / 1000000 )) ms"
  tail -c 600 "$RES/$set.jsonl" | tail -1
}
for s in "$@"; do
  case $s in
    smoe-photos)
      for img in .gpu-data/*.png; do
        name=$(basename "$img" .png)
        px=$(python3 -c "from PIL import Image; w,h=Image.open('$img').size; print(w*h)" 2>/dev/null || echo 262144)
        k=$(( px / 44 ))
        step smoe-photos "$name-em" $B/smoe fit "$img" --kernels $k --iterations 40 --refine-steps 0 --out "$W/$name-em.smoe" --json
        step smoe-photos "$name-refined" $B/smoe fit "$img" --kernels $k --iterations 40 --out "$W/$name-r.smoe" --json
        step smoe-photos "$name-refined1000" $B/smoe fit "$img" --kernels $k --iterations 40 --refine-steps 1000 --out "$W/$name-r1000.smoe" --json
        step smoe-photos "$name-render" $B/smoe render "$W/$name-r.smoe" --out "$W/$name-r.png" --json
      done ;;
    smoe-large)
      for img in .gpu-data/*.png; do
        name=$(basename "$img" .png)
        python3 - "$img" "$W/$name" <<'PY' || { echo "== smoe-large: cannot resize $img (PIL)"; continue; }
import sys
from PIL import Image
im = Image.open(sys.argv[1]).convert("RGB")
w, h = im.size
cw, ch = min(w, h * 3 // 2), min(h, w * 2 // 3)
im = im.crop(((w - cw) // 2, (h - ch) // 2, (w - cw) // 2 + cw, (h - ch) // 2 + ch))
for W, H in [(768, 512), (2048, 1365)]:
    im.resize((W, H), Image.LANCZOS).save(f"{sys.argv[2]}-{W}.png")
PY
        step smoe-large "$name-768x512-k9000" $B/smoe fit "$W/$name-768.png" --kernels 9000 --out "$W/$name-768.smoe" --json
        step smoe-large "$name-768x512-k9000-render" $B/smoe render "$W/$name-768.smoe" --out "$W/$name-768-r.png" --json
        step smoe-large "$name-768x512-psnr32" $B/smoe fit "$W/$name-768.png" --psnr 32 --out "$W/$name-768-q32.smoe" --json
        step smoe-large "$name-2048x1365-k70000" $B/smoe fit "$W/$name-2048.png" --kernels 70000 --out "$W/$name-2048.smoe" --json
      done ;;
    mosaic-exact)
      python3 - "$W" <<'PY'
import sys, numpy as np
w = sys.argv[1]
rng = np.random.default_rng(1)
for m, n in [(900, 8192), (2048, 8192), (10000, 10000)]:
    np.save(f"{w}/d{m}x{n}.npy", rng.random((m, n), dtype=np.float32))
PY
      for mn in 900x8192 2048x8192 10000x10000; do
        for rep in 1 2; do
          step mosaic-exact "gpu-$mn-$rep" $B/mosaic solve --distance "$W/d$mn.npy" --method exact --backend gpu --json
        done
        # The CPU solvers are O(m^2 n): at 10000x10000 they would take the whole call.
        [ "$mn" = 10000x10000 ] && continue
        step mosaic-exact "cpu-$mn" $B/mosaic solve --distance "$W/d$mn.npy" --method exact --backend cpu --json
        python3 - "$W/d$mn.npy" >>"$RES/mosaic-exact.jsonl" 2>>"$RES/mosaic-exact.err" <<'PY'
import sys, time, json, numpy as np
try:
    from scipy.optimize import linear_sum_assignment
except ImportError:
    print(json.dumps({"peer": "scipy", "error": "not installed"})); sys.exit()
d = np.load(sys.argv[1]).astype(np.float64)
t = time.perf_counter(); r, c = linear_sum_assignment(d); ms = (time.perf_counter() - t) * 1e3
print(json.dumps({"peer": "scipy.linear_sum_assignment", "shape": list(d.shape), "ms": ms, "cost": float(d[r, c].sum())}))
PY
      done ;;
    mosaic-costs)
      sizes=""
      for mn in ${COSTS_SIZES:-2048x8192 4096x4096 10000x10000 4096x16384}; do sizes="$sizes --size $mn"; done
      # One JSON line per solver as it finishes, so a run cut short keeps what it measured.
      STEP_TIMEOUT=${STEP_TIMEOUT:-500} step mosaic-costs all python3 .gpu/exact_costs.py --mosaic $B/mosaic \
        --hylac .gpu/hylac --limit 90 --kinds "${COSTS_KINDS:-photo,uniform,integer}" $sizes ;;
    lightfield-files)
      step lightfield-files generate $B/lightfield generate --out "$W/lf.npy" --views 8x8 --size 1024x1024 --json
      step lightfield-files train $B/lightfield train --input "$W/lf.npy" --dictionaries 64 --out "$W/d.lfd" --json
      step lightfield-files encode $B/lightfield encode --input "$W/lf.npy" --dict "$W/d.lfd" --sparsity 1200 --epsilon 0.01 --out "$W/lf.lfc" --json
      step lightfield-files decode $B/lightfield decode "$W/lf.lfc" --out "$W/back.npy" --json
      step lightfield-files decode-view $B/lightfield decode "$W/lf.lfc" --view 3,4 --out "$W/v.png" --json
      step lightfield-files render $B/lightfield render "$W/lf.lfc" --view 3.5,4.25 --focus 1 --aperture 2 --out "$W/s.png" --json ;;
    *) echo "unknown set $s" ;;
  esac
done
