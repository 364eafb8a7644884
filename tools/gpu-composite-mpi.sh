#!/usr/bin/env bash
# Runs on a multi-GPU machine (called by gpu-bench.sh, set composite-mpi): a 4K frame of a
# 4M-point cloud composited over one rank per GPU with `composite render` (GPU Active Pixel
# encoding and GPU compositing; CPU encoding and compositing; raw exchange; each strategy),
# then, when an IceT driver bundle is present (ICET, default .gpu-icet/run-icet.sh, made by
# tools/icet/build.sh from Debian's IceT build), IceT on the very same partial images. One JSON object per line
# on stdout, each tagged with "run"; image checks on stderr.
set -uo pipefail
B=${B:-.gpu/bin}
ICET=${ICET:-.gpu-icet/run-icet.sh}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader OMPI_MCA_plm_rsh_agent=
N=${RANKS:-$(nvidia-smi -L | wc -l)}
SIZE=${SIZE:-3840x2160}
FRAMES=${FRAMES:-20}
POINTS=${POINTS:-4000000}
S="--scene points:$POINTS --size $SIZE --frames $FRAMES --json"
T=$(mktemp -d)
tag() { sed "s/^{/{\"run\":\"$1\",/"; }
$B/composite render $S --out "$T/one.png" --partials "$T/one" | tag "1 rank" 
for st in binary-swap radix-k direct-send; do
  extra=(); [ "$st" = binary-swap ] && extra=(--partials "$T/parts")
  mpirun -n "$N" $B/composite render $S --strategy $st --out "$T/$st.png" "${extra[@]}" | tag "$N ranks $st gpu-ap"
  cmp -s "$T/one.png" "$T/$st.png" && echo "image $st: identical to 1 rank" >&2 || echo "image $st: DIFFERS" >&2
done
mpirun -n "$N" $B/composite render $S --strategy binary-swap --backend cpu --out "$T/cpu.png" | tag "$N ranks binary-swap cpu-ap"
mpirun -n "$N" $B/composite render $S --strategy binary-swap --no-compress --out "$T/raw.png" | tag "$N ranks binary-swap raw"
cmp -s "$T/one.png" "$T/cpu.png" && cmp -s "$T/one.png" "$T/raw.png" && echo "images cpu, raw: identical" >&2
if [ -x "$ICET" ]; then
  for st in bswap radixk; do
    for roi in "" --roi; do
      mpirun -n "$N" "$ICET" --partials "$T/parts" --size "$SIZE" --frames "$FRAMES" --strategy $st $roi \
        --out "$T/icet-$st$roi.rgba" | tag "$N ranks icet $st$roi"
      cmp -s "$T/one/rank0.rgba" "$T/icet-$st$roi.rgba" && echo "icet $st$roi: identical to ours" >&2 \
        || echo "icet $st$roi: $(cmp -l "$T/one/rank0.rgba" "$T/icet-$st$roi.rgba" | wc -l) bytes differ from ours" >&2
    done
  done
else
  echo "no IceT bundle at $ICET" >&2
fi
rm -rf "$T"
