#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (GoogleTest suites + the lit suite).
# GPU tests carry the ctest label "gpu" and skip themselves without a CUDA device.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
build=${AMP_BUILD_DIR:-$root/build}
ctest --test-dir "$build" --output-on-failure -j "$(nproc)"
