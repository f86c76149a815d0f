#!/usr/bin/env bash
# Configures (once) and builds ampc into build/ (override with AMP_BUILD_DIR).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${AMP_BUILD_DIR:-$root/build}
# ccache keys on paths relative to the checkout, so another clone of the repository (CI's) reuses
# this machine's cached objects instead of compiling everything again.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root}
if [ ! -f "$build/build.ninja" ]; then
  cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR=/usr/lib/llvm-19/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-19/build/utils/lit/lit.py "$@"
fi
cmake --build "$build"
