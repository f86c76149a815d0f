#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (GoogleTest suites + the lit suite).
# GPU tests carry the ctest label "gpu" and skip themselves without a CUDA device.
# Then the cpu tests once more at the x86-64-v3 level (AVX2, no AVX-512, no AMX) when this CPU has
# more, so that a pass here means a pass on every x86-64-v3 machine (scripts/cpu-level-tests.sh).
# Then the sanitizer subset CI affords (scripts/sanitize.sh --ci: the tensor-file and plan readers
# and their unit tests under ASan + UBSan, in build-sanitize-ci/; docs/reliability.md has its
# timings). AMP_SKIP_SANITIZE=1 skips it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
build=${AMP_BUILD_DIR:-$root/build}
ctest --test-dir "$build" --output-on-failure -j "$(nproc)"
"$root/scripts/cpu-level-tests.sh" x86-64-v3
if [ "${AMP_SKIP_SANITIZE:-0}" != 1 ]; then
  AMP_JOBS=$(nproc) "$root/scripts/sanitize.sh" --ci
fi
