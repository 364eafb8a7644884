#!/bin/sh
# Builds the example renderer against the compositing library through its pkg-config file
# (tools/pkgconfig/tessera-composite.pc), into target/PROFILE/examples-c/render. PROFILE
# (default release) names the cargo profile libtessera_composite.so was built with:
#   cargo build -p tessera-composite-capi --release && sh examples/c/build.sh
#   cargo build -p tessera-composite-capi && sh examples/c/build.sh debug
set -eu
HERE=$(CDPATH= cd -- "$(dirname -- "$0")" && pwd)
ROOT=$(CDPATH= cd -- "$HERE/../.." && pwd)
PROFILE=${1:-release}
OUT="$ROOT/target/$PROFILE/examples-c"
mkdir -p "$OUT"
FLAGS=$(PKG_CONFIG_PATH="$ROOT/tools/pkgconfig" pkg-config --define-variable=profile="$PROFILE" --cflags --libs tessera-composite)
# shellcheck disable=SC2086
cc -O2 -std=c99 -Wall -Wextra -Werror -o "$OUT/render" "$HERE/render.c" "$HERE/png.c" $FLAGS -lm
