#!/usr/bin/env bash
# The main job: install, build, then compile the Fashion-MNIST MLP with ampc and show the result.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
build=${AMP_BUILD_DIR:-$root/build}
echo "== ampc examples/mlp.mlir --emit=ir"
"$build/bin/ampc" "$root/examples/mlp.mlir" --emit=ir
