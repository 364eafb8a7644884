#!/usr/bin/env bash
# The test command: installs what is missing, then runs every test of the workspace on the
# default Vulkan device (lavapipe without a GPU) with validation layers on. A validation
# message fails the test that caused it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
export TESSERA_VALIDATION=1
# Built-in kernel shapes only: a tuning file of the developer's (~/.config/tessera) would
# change defaults that tests check. Tests of the tuning set their own file.
export TESSERA_TUNING="$PWD/target/no-tuning.json"
# The reader mutation tests (kit::fuzz) append their case counts here for the summary.
export TESSERA_FUZZ_LOG="$PWD/target/fuzz-cases.log"
# Open MPI as root inside containers, shared memory only, no ssh (see docs/PLATFORM notes).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader OMPI_MCA_plm_rsh_agent=
mkdir -p target
rm -f "$TESSERA_FUZZ_LOG"
# The end-to-end tests (tests/) run the built binaries, and the C example links the
# compositing library's cdylib: build every target once, with the features `cargo test`
# resolves (a narrower selection such as --bins or -p would resolve the shared dependencies'
# features differently and compile them a second time).
cargo build --workspace --all-targets
# The C example renderer, built against the cdylib through its pkg-config file
# (apps/composite/tests/c_api.rs runs it under mpirun).
sh examples/c/build.sh debug
# IceT's driver (Debian's ParaView packages, about 72 MB, ~15 s), which the C example is
# compared with; without it (no network) that comparison is skipped.
bash tools/icet/build.sh || echo "tools/icet/build.sh failed: the IceT comparison is skipped"
set +e
cargo test --workspace --no-fail-fast "$@" 2>&1 | tee target/test.log
status=${PIPESTATUS[0]}
# No import circles between sibling modules of any crate.
echo "== import circles (tools/import-circles.py) =="
python3 tools/import-circles.py || status=1
# The Python package (python/): its wheel in the dev profile from this target dir, pytest.
echo "== python package (tools/test-python.sh) =="
bash tools/test-python.sh || status=1
set -e
echo "== reader mutation tests (case counts) =="
if [ -f "$TESSERA_FUZZ_LOG" ]; then sort "$TESSERA_FUZZ_LOG"; awk '{ n += $3 } END { printf "fuzz: %d mutated files in total\n", n }' "$TESSERA_FUZZ_LOG"; fi
echo "== test summary =="
awk '/^test result:/ { split($0, a, /[ .;]+/); for (i in a) { if (a[i] == "passed") p += a[i-1]; if (a[i] == "failed") f += a[i-1]; if (a[i] == "ignored") g += a[i-1] } } END { printf "passed %d, failed %d, ignored %d\n", p, f, g }' target/test.log
exit "$status"
