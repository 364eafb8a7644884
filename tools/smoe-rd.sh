#!/usr/bin/env bash
# The rate-distortion run of `.smc` against JPEG, JPEG 2000, WebP and AVIF (tools/smoe_rd.py)
# on the GPU machine: scikit-image's colour photos at native size, 0.1 to 2 bpp, with the
# release binary tools/gpu-pack.sh builds. Results (smoe_rd.json, .md, .png) go to $OUT.
# Extra arguments go to smoe_rd.py (e.g. --time-limit 300, --bpp 0.25,0.5).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${SMOE_BIN:-.gpu/bin/smoe}
OUT=${OUT:-smoe-rd}
mkdir -p "$OUT"
python3 -c 'import PIL.features as f; print("pillow codecs:", {k: f.check(k) for k in ["jpg", "jpg_2000", "webp", "avif"]})'
exec python3 tools/smoe_rd.py --bin "$BIN" --out "$OUT" "$@"
