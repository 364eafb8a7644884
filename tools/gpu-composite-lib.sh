#!/usr/bin/env bash
# The compositing library against IceT on the same partial images, on the GPU machine.
#   bash tools/gpu-composite-lib.sh pack   # here: release cdylib + C example + IceT bundle into .gpu-lib/
#   bash tools/gpu-composite-lib.sh        # there (run with carry [".gl", ".gpu-lib", ".gpu-icet"])
# On the device: for 4K and 8K and RANKS ranks (default "2 3 4 8"), several ranks sharing the
# one GPU (said in each line's "gpus"), the C example renders its spheres and composites them
# with libtessera_composite (GPU Active Pixel path, z-buffer, FRAMES frames, each of
# STRATEGIES: default "bswap radixk direct") writing its partials, then IceT's driver
# composites the very same partials (bswap and radixk, with its valid-pixel viewport,
# --roi). One JSON line per frame, tagged "run"; image checks on stderr. The per-strategy
# lines at several rank counts are what tools/composite_model.py fits. RENDER_ARGS passes
# more of the example's options (e.g. "--mode over", "--float"; the IceT driver composites
# the RGBA8 partials by z-buffer only, so it runs only when RENDER_ARGS is empty).
set -uo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = pack ]; then
  set -e
  # The release folder tools/gpu-pack.sh builds in; the example links the library where the
  # pkg-config file names it (target/release).
  CARGO_TARGET_DIR=target-release cargo build -p tessera-composite-capi --release
  mkdir -p target/release .gpu-lib
  cp -f target-release/release/libtessera_composite.so target/release/
  sh examples/c/build.sh release
  cp -f target/release/libtessera_composite.so target/release/examples-c/render .gpu-lib/
  # The example finds the library beside it on the device.
  patchelf --set-rpath '$ORIGIN' .gpu-lib/render 2>/dev/null || echo "no patchelf: LD_LIBRARY_PATH is set at run time" >&2
  [ -x .gpu-icet/run-icet.sh ] || bash tools/icet/build.sh
  exit 0
fi
for f in .gl/*.deb; do [ -f "$f" ] && dpkg -x "$f" /; done
ldconfig 2>/dev/null || true
export VK_DRIVER_FILES=${VK_DRIVER_FILES:-/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader OMPI_MCA_plm_rsh_agent=
export LD_LIBRARY_PATH="$PWD/.gpu-lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
ICET=${ICET:-.gpu-icet/run-icet.sh}
FRAMES=${FRAMES:-10}
GPUS=$(nvidia-smi -L 2>/dev/null | wc -l)
T=$(mktemp -d)
for SIZE in 3840x2160 7680x4320; do
  for N in ${RANKS:-2 3 4 8}; do
    tag() { sed "s/^{/{\"run\":\"$1\",\"gpus\":$GPUS,/"; }
    mkdir -p "$T/p$N$SIZE"
    for st in ${STRATEGIES:-bswap radixk direct}; do
      mpirun -n "$N" --oversubscribe --bind-to none .gpu-lib/render --size "$SIZE" --spheres 400 --frames "$FRAMES" \
        --strategy "$st" --partials "$T/p$N$SIZE" --out "$T/ours.png" ${RENDER_ARGS:-} | tag "$N ranks $SIZE tessera $st${RENDER_ARGS:+ $RENDER_ARGS}"
    done
    [ -z "${RENDER_ARGS:-}" ] || continue
    for st in bswap radixk; do
      mpirun -n "$N" --oversubscribe --bind-to none "$ICET" --partials "$T/p$N$SIZE" --size "$SIZE" --frames "$FRAMES" \
        --strategy $st --roi --out "$T/icet.rgba" | tag "$N ranks $SIZE icet $st"
    done
  done
done
rm -rf "$T"
