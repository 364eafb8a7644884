#!/usr/bin/env bash
# The refinement step on the GPU machine: `smoe bench --set refine` (GPU time of each pass of
# a step and the wall time per step at 44 pixels per kernel), then the default fit of
# scikit-image's natural photos at native size at 44 pixels per kernel (process wall time,
# start / EM / refinement, PSNR of the fit), for each smoe binary named in SMOE_BINS
# (default .gpu/bin/smoe; e.g. "old=.gpu/old-bin/smoe new=.gpu/bin/smoe" for a comparison
# in one call, old and new alternating per photo). STEPS lists the fits per photo and binary:
# "default", a refinement step count, or ITERSxSTEPS (EM iterations and steps).
# Output: $OUT/refine.jsonl (one JSON line per measurement, each with "binary").
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
W=/tmp/tessera-refine; mkdir -p "$W"
BINS=${SMOE_BINS:-new=.gpu/bin/smoe}
PHOTOS=${PHOTOS:-astronaut,coffee,rocket,motorcycle_left}
python3 - "$W" "$PHOTOS" <<'PY'
import sys
import numpy as np
from PIL import Image
from skimage import data
for name in sys.argv[2].split(","):
    img = data.stereo_motorcycle()[0] if name == "motorcycle_left" else getattr(data, name)()
    img = np.asarray(img)
    if img.ndim == 2:
        img = np.repeat(img[:, :, None], 3, axis=2)
    Image.fromarray(np.ascontiguousarray(img[:, :, :3]).astype(np.uint8)).save(f"{sys.argv[1]}/{name}.png")
PY
tag() { python3 -c 'import json,sys; b=sys.argv[1]; [print(json.dumps(dict(json.loads(l), binary=b))) for l in sys.stdin if l.startswith("{")]' "$1"; }
for nb in $BINS; do
  name=${nb%%=*} bin=${nb#*=}
  timeout 120 "$bin" bench --set refine --json 2>>"$OUT/refine.err" | tag "$name" >>"$OUT/refine.jsonl"
done
for img in "$W"/*.png; do
  photo=$(basename "$img" .png)
  px=$(python3 -c "from PIL import Image; w,h=Image.open('$img').size; print(w*h)")
  for nb in $BINS; do
    name=${nb%%=*} bin=${nb#*=}
    for steps in ${STEPS:-default}; do
      # "default", a step count, or EM iterations and steps as ITERSxSTEPS (e.g. 20x400).
      extra=()
      case "$steps" in
        default) ;;
        *x*) extra=(--iterations "${steps%%x*}" --refine-steps "${steps#*x}") ;;
        *) extra=(--refine-steps "$steps") ;;
      esac
      t0=$(date +%s%N)
      timeout 120 "$bin" fit "$img" --kernels $((px / 44)) "${extra[@]}" --out "$W/$photo-$name.smoe" --json >"$W/fit.json" 2>>"$OUT/refine.err"
      wall=$(( ($(date +%s%N) - t0) / 1000000 ))
      python3 -c 'import json,sys; w,p,b,s=sys.argv[1:]; [print(json.dumps(dict(json.loads(l), binary=b, photo=p, steps=s, process_wall_ms=float(w)))) for l in sys.stdin if l.startswith("{")]' \
        "$wall" "$photo" "$name" "$steps" <"$W/fit.json" >>"$OUT/refine.jsonl"
    done
  done
done
cat "$OUT/refine.jsonl"
