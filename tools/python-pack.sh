#!/usr/bin/env bash
# Packs the Python benchmark for the GPU machine into .gpu/python/ (git-ignored): the
# tessera wheel built in release (abi3: any CPython 3.10+ there; it links only glibc and
# loads libvulkan at run time, as the binaries do), the benchmark driver, and pyiqa's
# MAD files from its wheel (pure Python; they need only torch, numpy and scipy, which the
# machine has).
# Run tools/gpu-pack.sh first for .gpu/bin/mad and .gl/; then
#   run(carry: [".gl", ".gpu"], command: "bash .gpu/bench-python.sh")
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target-release}
venv=target/python-venv
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check "maturin>=1.9,<2"
rm -rf .gpu/python && mkdir -p .gpu/python
"$venv/bin/maturin" build --release --strip --interpreter "$venv/bin/python" --out .gpu/python
"$venv/bin/pip" download -q --disable-pip-version-check --no-deps pyiqa==0.1.16 -d target/pyiqa
# Only the files its MAD imports (and its licence) travel: 7.8 MB of wheel become a few KB.
python3 - target/pyiqa/pyiqa-0.1.16-py3-none-any.whl .gpu/python/pyiqa-0.1.16-mad.zip <<'PY'
import sys, zipfile
keep = ("pyiqa/archs/mad_arch.py", "pyiqa/matlab_utils/", "pyiqa/utils/color_util.py", "pyiqa/utils/registry.py", ".dist-info/")
with zipfile.ZipFile(sys.argv[1]) as src, zipfile.ZipFile(sys.argv[2], "w", zipfile.ZIP_DEFLATED) as dst:
    for name in src.namelist():
        if any(k in name for k in keep):
            dst.writestr(name, src.read(name))
PY
cp tools/bench_python.py .gpu/python/
cp tools/bench-python.sh .gpu/
du -sh .gpu/python
