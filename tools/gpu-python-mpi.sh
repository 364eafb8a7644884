#!/usr/bin/env bash
# tessera.composite.Compositor on the GPU machine: examples/python/composite_mpi.py under
# mpirun at 4K and 8K, 2 and 4 ranks sharing the GPU, z-buffer and over, checked against an
# independent composite on the root; one JSON line of per-phase times per frame.
# Needs the wheel in .gpu/python (tools/python-pack.sh) and mpi4py in the machine's Python.
set -uo pipefail
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader OMPI_MCA_plm_rsh_agent=
site=$(mktemp -d)
python3 -c "import zipfile, glob, sys; zipfile.ZipFile(glob.glob('.gpu/python/tessera-*.whl')[0]).extractall(sys.argv[1])" "$site"
export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
OUT=${OUT:-/tmp/out}
for size in 3840x2160 7680x4320; do
  for n in 2 4; do
    for mode in zbuffer over; do
      timeout 240 mpirun -n "$n" --oversubscribe python3 examples/python/composite_mpi.py --size "$size" \
        --spheres 400 --frames 5 --mode "$mode" --check --out "$( [ "$size$n$mode" = 3840x21604zbuffer ] && echo "$OUT" || echo /tmp )/frame-$size-$n-$mode.png" 2>&1 | tail -7
    done
  done
done
rm -rf "$site"
