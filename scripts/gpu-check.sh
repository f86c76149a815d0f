#!/usr/bin/env bash
# The GPU check of the cuda device (docs/cuda-device.md), in two halves:
#
#   scripts/gpu-check.sh --package [FILE]    here, after scripts/build.sh: packs what the GPU machine
#                                            runs into FILE (default .gpu-check/package.tar.xz)
#   scripts/gpu-check.sh [--dry-run] [FILE]  on the GPU machine: unpacks FILE, runs the GPU tests and
#                                            the benchmarks, writes logs and results.json under $OUT
#                                            (default .gpu-check/out); about 3 minutes, under 5
#
# The GPU machine this is for (an H200 host with the driver, nvcc 13, CMake, GCC and PyTorch, but no
# Debian -dev packages, no MLIR and no network) cannot build the project: the runtime needs Abseil,
# oneDNN, Open MPI and GoogleTest. So the package carries the runtime-only binaries built here (amp-run,
# the cuda test binaries, amp-bench-cuda-gemm), the shared libraries they load that such a machine
# lacks, the cuda bundles compiled here by ampc (NVRTC needs no GPU), and the benchmark scripts.
#
# --dry-run runs everything short of the GPU, on any x86-64 machine: the executor's dry-run tests and
# `amp-run --device=cuda --dry-run` on every bundle (prepare, capture, print the graph).
# Exit status: 0 when every check passed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mode=run
case "${1:-}" in
  --package) mode=package; shift ;;
  --dry-run) mode=dry; shift ;;
esac
package=${1:-$root/.gpu-check/package.tar.xz}

if [ "$mode" = package ]; then
  build=${AMP_BUILD_DIR:-$root/build}
  bins=(amp-run amp-cuda-gpu-tests amp-cuda-executor-tests amp-conformance-tests amp-bench-cuda-gemm)
  for b in "${bins[@]}" ampc; do
    [ -x "$build/bin/$b" ] || { echo "gpu-check: $build/bin/$b is missing: run scripts/build.sh first" >&2; exit 1; }
  done
  bundles="$build/test/unit/cuda/bundles"
  ls "$bundles"/*.ampx >/dev/null 2>&1 || { echo "gpu-check: no cuda bundles in $bundles (a build without the CUDA toolkit?)" >&2; exit 1; }
  stage=$(mktemp -d)
  trap 'rm -rf "$stage"' EXIT
  mkdir -p "$stage/bin" "$stage/lib" "$stage/bundles" "$stage/bench"
  for b in "${bins[@]}"; do cp "$build/bin/$b" "$stage/bin/"; done
  cp "$bundles"/*.ampx "$stage/bundles/"
  # The bundles were authenticated by ampc under this user's key; the package carries the key so
  # that amp-run on the GPU machine verifies them (and still refuses native code from elsewhere)
  # rather than trusting every bundle (docs/kernels.md, "Keys on other machines").
  key=${AMP_KEY_FILE:-${XDG_CONFIG_HOME:-$HOME/.config}/ampc/key}
  [ -f "$key" ] && install -m 600 "$key" "$stage/ampc.key"
  # The conformance suite's bundles: the cpu device's, the cuda device's and its own (distinct names).
  cp "$build"/test/unit/cpu/bundles/*.ampx "$build"/test/unit/conformance/bundles/*.ampx "$stage/bundles/"
  # The benchmark model, PyTorch's AMP recipe: bench/gen_mlp.py's 4096-wide MLP, batch 512, MSE, SGD,
  # for sm_90 in each precision.
  python3 "$root/bench/gen_mlp.py" --batch 512 --widths 4096,4096,4096,4096 --loss mse -o "$stage/mlp4096.mlir"
  # And the examples' transformer block, AdamW, as bench/cuda_pytorch.py's TransformerLM.
  for p in f32 bf16 f16; do
    "$build/bin/ampc" "$stage/mlp4096.mlir" --train --precision=$p --optimizer=sgd --lr=2e-3 --target=cuda:sm_90 \
      -o "$stage/bundles/bench_mlp4096_${p}_sm_90.ampx"
    "$build/bin/ampc" "$root/examples/transformer_lm.mlir" --train --precision=$p --optimizer=adamw --lr=3e-3 \
      --target=cuda:sm_90 -o "$stage/bundles/bench_lm_${p}_sm_90.ampx"
  done
  # bf16 with cuBLASLt's training epilogues, for bench/cuda_step.py's comparison with the exact kernels.
  "$build/bin/ampc" "$stage/mlp4096.mlir" --train --precision=bf16 --optimizer=sgd --lr=2e-3 --target=cuda:sm_90 \
    --gemm-epilogues=cublaslt -o "$stage/bundles/bench_mlp4096_bf16_epilogues_sm_90.ampx"
  "$build/bin/ampc" "$root/examples/transformer_lm.mlir" --train --precision=bf16 --optimizer=adamw --lr=3e-3 \
    --target=cuda:sm_90 --gemm-epilogues=cublaslt -o "$stage/bundles/bench_lm_bf16_epilogues_sm_90.ampx"
  # The convolution benchmark: implicit GEMMs against the direct kernels (bf16).
  "$build/bin/ampc" "$root/bench/models/cnn_bench.mlir" --train --precision=bf16 --optimizer=sgd --lr=1e-3 \
    --target=cuda:sm_90 -o "$stage/bundles/bench_cnn_bf16_sm_90.ampx"
  cp "$root"/bench/cuda_step.py "$root"/bench/cuda_pytorch.py "$root"/bench/ampc_step.py "$root"/bench/gen_mlp.py \
    "$root"/examples/make_lm_data.py "$stage/bench/"
  # Shared libraries outside the C runtime and the compiler's own (which any machine with GCC has).
  for b in "${bins[@]}"; do ldd "$build/bin/$b"; done | awk '$3 ~ /^\// {print $3}' | sort -u |
    grep -vE '/(libc|libm|libdl|libpthread|librt|ld-linux-x86-64|libstdc\+\+|libgcc_s)\.so' |
    while read -r lib; do cp -L "$lib" "$stage/lib/"; done
  mkdir -p "$(dirname "$package")"
  tar -C "$stage" -cJf "$package" .
  echo "gpu-check: packed $(du -h "$package" | cut -f1) into $package ($(ls "$stage/bundles" | wc -l) bundles, $(ls "$stage/lib" | wc -l) libraries)"
  exit 0
fi

[ -f "$package" ] || { echo "gpu-check: no package at $package (scripts/gpu-check.sh --package first)" >&2; exit 1; }
out=${OUT:-$root/.gpu-check/out}
mkdir -p "$out"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
tar -C "$dir" -xJf "$package"
[ -f "$dir/ampc.key" ] && export AMP_KEY_FILE="$dir/ampc.key"  # the key the bundles were sealed with
export LD_LIBRARY_PATH="$dir/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
failures=0
check() {  # check NAME SECONDS COMMAND...: runs it, logs it, counts a failure
  local name=$1 seconds=$2
  shift 2
  local start=$SECONDS
  if timeout "$seconds" bash -c '"$@"' _ "$@" >"$out/$name.log" 2>&1; then
    echo "gpu-check: PASS $name ($((SECONDS - start)) s)"
  else
    echo "gpu-check: FAIL $name (exit $?, $((SECONDS - start)) s; $out/$name.log):"
    tail -n 20 "$out/$name.log" | sed 's/^/    /'
    failures=$((failures + 1))
  fi
}
dry_runs() {
  # The cuda targets' bundles (the rest are the cpu device's), those compiled with
  # `ampc --gemm-epilogues=cublaslt` (*_epilogues_*) among them.
  for b in "$dir"/bundles/*_sm_*.ampx; do
    echo "== $(basename "$b")"
    "$dir/bin/amp-run" "$b" --device=cuda --dry-run || return 1
  done
}

# Every bundle's entries and a run of training steps against the reference, on the cpu device, the
# dry run and (on the GPU machine, where a skip means the device could not be opened) the GPU.
conformance() {
  AMP_TEST_BUNDLE_DIR="$dir/bundles" "$dir/bin/amp-conformance-tests" || return 1
  [ "$mode" = dry ] || ! grep -q '\[  SKIPPED \]' "$out/conformance.log"
}

export -f dry_runs conformance
export dir out mode
check executor-tests 60 "$dir/bin/amp-cuda-executor-tests"
check dry-run 60 dry_runs
check conformance 300 conformance
if [ "$mode" = dry ]; then
  echo "gpu-check: dry run: $failures failure(s); stopped before the first kernel launch"
  exit $((failures > 0))
fi

check nvidia-smi 20 nvidia-smi
# On the GPU machine a skipped GPU test is a failure: it means the device could not be opened.
gpu_tests() {
  "$dir/bin/amp-cuda-gpu-tests" --gtest_output="json:$out/gpu-tests.json" || return 1
  ! grep -q '\[  SKIPPED \]' "$out/gpu-tests.log"
}
export -f gpu_tests
export AMP_CUDA_BUNDLE_DIR="$dir/bundles"
check gpu-tests 150 gpu_tests
check bench 240 python3 "$dir/bench/cuda_step.py" --bindir "$dir/bin" --bundles "$dir/bundles" --json "$out/results.json"
[ -f "$out/bench.log" ] && sed -n '/^GEMM/,$p' "$out/bench.log"
echo "gpu-check: $failures failure(s)"
exit $((failures > 0))
