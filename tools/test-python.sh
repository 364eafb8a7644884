#!/usr/bin/env bash
# The Python package's tests: builds the `tessera` wheel in the dev profile from the
# workspace's own target dir (the workspace build has compiled every dependency already; a
# user's `pip install .` is a release build), installs it into a venv of its own
# (target/python-venv) and runs python/tests with pytest on the default Vulkan device.
# tools/test.sh runs it with validation layers on; alone it sets the same environment.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
export TESSERA_VALIDATION="${TESSERA_VALIDATION:-1}"
export TESSERA_TUNING="${TESSERA_TUNING:-$PWD/target/no-tuning.json}"
venv="$PWD/target/python-venv"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv" || { echo "test-python.sh: python3 -m venv failed (install python3-venv)" >&2; exit 1; }
fi
"$venv/bin/pip" install -q --disable-pip-version-check "maturin>=1.9,<2" numpy pytest mpi4py
rm -rf target/python-wheels
VIRTUAL_ENV="$venv" "$venv/bin/maturin" build --profile dev --interpreter "$venv/bin/python" --out target/python-wheels
"$venv/bin/pip" install -q --disable-pip-version-check --force-reinstall --no-deps target/python-wheels/tessera-*.whl
built=$(date +%s)
"$venv/bin/python" -m pytest -q -p no:cacheprovider python/tests "$@"
echo "python: wheel built and installed in $((built - start)) s, tests ran in $(( $(date +%s) - built )) s"
