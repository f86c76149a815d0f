#!/usr/bin/env bash
# Runs the cpu device's tests (ctest label "cpu": its unit tests, the fused-kernel tests and the
# end-to-end runs on --device=cpu) as a machine of a lower x86 level would: AMP_CPU_FEATURES lowers
# what the device detects (GEMM paths, the fused-kernel object it loads) and ONEDNN_MAX_CPU_ISA
# what oneDNN dispatches to (docs/cpu-device.md). Where this CPU is at that level or below, the
# main ctest run already was that pass, and this says so and runs nothing.
#
#   scripts/cpu-level-tests.sh [x86-64|x86-64-v3|x86-64-v4|avx512_bf16] [CTEST_ARGS...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${AMP_BUILD_DIR:-$root/build}
level=${1:-x86-64-v3}
shift || true
case "$level" in
  x86-64) isa=SSE41 needs=sse2 above='avx2' ;;
  x86-64-v3) isa=AVX2 needs=avx2 above='avx512f' ;;
  x86-64-v4) isa=AVX512_CORE_VNNI needs=avx512f above='avx512_bf16|amx_tile' ;;
  avx512_bf16) isa=AVX512_CORE_BF16 needs=avx512_bf16 above='amx_tile' ;;
  *) echo "cpu-level-tests: unknown level '$level' (x86-64, x86-64-v3, x86-64-v4 or avx512_bf16)" >&2; exit 2 ;;
esac
# /proc/cpuinfo lists a flag only when the CPU has it and the OS enabled its state, which is what
# the device's own detection checks (CpuFeaturesTest.AgreesWithProcCpuinfo).
flags=$(grep -m1 '^flags' /proc/cpuinfo || true)
if ! grep -qw "$needs" <<<"$flags"; then
  echo "cpu-level-tests: this CPU has no $needs, so it cannot run the $level pass"
  exit 0
fi
if ! grep -qwE "$above" <<<"$flags"; then
  echo "cpu-level-tests: this CPU is at the $level level: the main test run above was the $level pass"
  exit 0
fi
echo "cpu-level-tests: the cpu tests again at the $level level (AMP_CPU_FEATURES=$level ONEDNN_MAX_CPU_ISA=$isa)"
AMP_CPU_FEATURES=$level ONEDNN_MAX_CPU_ISA=$isa \
  ctest --test-dir "$build" --output-on-failure -j "$(nproc)" -L '^cpu$' "$@"
