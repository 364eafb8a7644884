#!/usr/bin/env bash
# The light-field rate-distortion benchmark on rendered scenes: renders (or reuses from the
# cache) the scenes of tools/lfrender.sh, then runs tools/lfrd.py (ours against x265 and
# JPEG on the same views; dictionaries trained on the other scenes) and writes
# OUT/rd.jsonl and OUT/rd.png.
#   tools/lfrd.sh [--out DIR] [--size N] [--views UxV] [--backend cpu|gpu] [--bin PATH]
# Defaults: out/lightfield-rd, 9x9 views of 256x256, the CPU backend, target/release/lightfield.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$root/out/lightfield-rd" size=256 views=9x9 backend=cpu bin="$root/target/release/lightfield"
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --size) size="$2"; shift 2 ;;
    --views) views="$2"; shift 2 ;;
    --backend) backend="$2"; shift 2 ;;
    --bin) bin="$2"; shift 2 ;;
    *) echo "lfrd.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -x "$bin" ] || cargo build --release --manifest-path "$root/Cargo.toml" -p tessera-lightfield --bin lightfield >&2
mkdir -p "$out"
scenes=()
while read -r dir; do scenes+=(--scene "$dir"); done < <(bash "$root/tools/lfrender.sh" --views "$views" --size "$size")
exec python3 "$root/tools/lfrd.py" --lightfield "$bin" "${scenes[@]}" --work "$out/work" --json "$out/rd.jsonl" \
  --plot "$out/rd.png" --backend "$backend"
