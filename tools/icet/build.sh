#!/bin/sh
# Builds the IceT comparison driver (icet-composite.c, beside this script) for
# tools/gpu-composite-mpi.sh. IceT itself is not in this repository: it is IceT 2.2.0 as
# Debian bookworm ships it inside ParaView 5.11 (a build of IceT's public source). The
# packages are downloaded and unpacked under $WORK (default /tmp/tessera-icet) and the
# self-contained bundle (driver, the two IceT libraries, run-icet.sh) goes to .gpu-icet/
# (git-ignored), which a device run carries. Needs mpicc (libopenmpi-dev).
#   bash tools/icet/build.sh [BUNDLE]
set -eu
HERE=$(CDPATH= cd -- "$(dirname -- "$0")" && pwd)
ROOT=$(CDPATH= cd -- "$HERE/../.." && pwd)
BUNDLE=${1:-$ROOT/.gpu-icet}
WORK=${WORK:-/tmp/tessera-icet}
mkdir -p "$WORK" "$BUNDLE/lib"
cd "$WORK"
ls paraview_5.11.*.deb >/dev/null 2>&1 || apt-get download paraview=5.11.0+dfsg-1+b1 paraview-dev=5.11.0+dfsg-1+b1
[ -d pv ] || dpkg -x paraview_5.11.*.deb pv
[ -d pvdev ] || dpkg -x paraview-dev_5.11.*.deb pvdev
mkdir -p lib
# The binary links against the libraries' SONAME-style names.
for l in Core MPI; do
  cp -f pv/usr/lib/x86_64-linux-gnu/libvtkIceT$l-pv5.11.so.5.11 lib/libvtkIceT$l-pv5.11.so.1
  ln -sf libvtkIceT$l-pv5.11.so.1 lib/libvtkIceT$l-pv5.11.so
done
mpicc -O2 -std=c99 -Wall -Wextra \
  -I pvdev/usr/include/paraview-5.11/vtkicet/src/include \
  -o icet-composite "$HERE/icet-composite.c" \
  -L lib -lvtkIceTMPI-pv5.11 -lvtkIceTCore-pv5.11 \
  -Wl,-rpath,'$ORIGIN/lib' -Wl,--enable-new-dtags
cp -f icet-composite "$BUNDLE/"
cp -f lib/libvtkIceTCore-pv5.11.so.1 lib/libvtkIceTMPI-pv5.11.so.1 "$BUNDLE/lib/"
cp -f "$HERE/run-icet.sh" "$BUNDLE/run-icet.sh"
chmod +x "$BUNDLE/run-icet.sh" "$BUNDLE/icet-composite"
echo "IceT driver bundle: $BUNDLE"
