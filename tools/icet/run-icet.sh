#!/bin/sh
# Wrapper: run the IceT compositing driver with the bundled IceT libraries.
# Usage: mpirun -n P /path/to/.gpu-icet/run-icet.sh --partials DIR --size WxH ...
HERE=$(CDPATH= cd -- "$(dirname -- "$0")" && pwd)
LD_LIBRARY_PATH="$HERE/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export LD_LIBRARY_PATH
exec "$HERE/icet-composite" "$@"
