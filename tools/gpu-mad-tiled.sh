#!/usr/bin/env bash
# mad score of one large pair on the GPU machine, over the whole image and in tiles under
# memory budgets: the wall time of each beside the whole image's (the tiles should cost a
# small factor of it), and their scores. The pair: the astronaut photo resized to SIZE
# (default 8000x8000) and JPEG-compressed at quality 30, written as PNG.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}
SIZE=${SIZE:-8000x8000}
BIN=${BIN:-.gpu/bin}
d=$(mktemp -d)
python3 - "$SIZE" "$d" <<'PY'
import io, sys
from PIL import Image
w, h = map(int, sys.argv[1].split("x"))
ref = Image.open("assets/photos/astronaut.jpg").convert("RGB").resize((w, h), Image.BICUBIC)
ref.save(sys.argv[2] + "/ref.png", compress_level=1)
buf = io.BytesIO(); ref.save(buf, "JPEG", quality=30)
Image.open(buf).save(sys.argv[2] + "/dst.png", compress_level=1)
PY
for budget in 200G 8G 4G 2G; do
  for backend in gpu; do
    t0=$(date +%s.%N)
    line=$("$BIN"/mad score "$d/ref.png" "$d/dst.png" --backend "$backend" --max-memory "$budget" --json 2>"$d/err" | tail -1)
    t1=$(date +%s.%N)
    echo "{\"size\":\"$SIZE\",\"budget\":\"$budget\",\"backend\":\"$backend\",\"wall_s\":$(echo "$t1 - $t0" | bc),\"result\":${line:-null}}"
    grep -i "tile\|error" "$d/err" | tail -2
  done
done | tee "$OUT/mad-tiled.jsonl"
rm -rf "$d"
