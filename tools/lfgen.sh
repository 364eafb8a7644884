#!/usr/bin/env bash
# Writes a synthetic light field (textured planes at several depths, real parallax) as a
# float32 .npy of shape (U, V, H, W, 3). Arguments pass through to `lightfield generate`:
#   tools/lfgen.sh --out LF.npy [--views UxV] [--size WxH] [--seed S]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="$root/target/release/lightfield"
[ -x "$bin" ] || cargo build --release --manifest-path "$root/Cargo.toml" -p tessera-lightfield --bin lightfield >&2
exec "$bin" generate "$@"
