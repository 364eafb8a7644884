#!/usr/bin/env bash
# The Python package's benchmark on the GPU machine, from a .gpu/ folder that
# tools/python-pack.sh filled (the tessera wheel built in release, pyiqa's MAD files) beside
# tools/gpu-pack.sh's binaries, and the Vulkan loader in .gl/:
#   run(carry: [".gl", ".gpu"], command: "bash .gpu/bench-python.sh")
# tessera.mad_batch on 1000 512x512 pairs against `mad batch` on the same pairs, and
# pyiqa's MAD on the same GPU. Results: $OUT/bench-python.jsonl and $OUT/bench-python.md
# (a table for BENCHMARKS.md).
set -euo pipefail
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export TESSERA_VALIDATION=0
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
site=/tmp/tessera-site; rm -rf "$site"; mkdir -p "$site"
# A wheel is a zip of the package: unpacked onto the path, it needs no pip or index.
python3 -c "import zipfile, sys; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])" .gpu/python/tessera-*.whl "$site"
export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
python3 -c "import tessera; print(tessera.__version__, [d.name for d in tessera.devices()])"
wheel=$(ls .gpu/python/pyiqa-*.zip 2>/dev/null | head -1 || true)
python3 .gpu/python/bench_python.py --mad .gpu/bin/mad --pyiqa-wheel "$wheel" --out "$OUT" "$@" 2>&1 | tee "$OUT/bench-python.log"
