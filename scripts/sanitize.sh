#!/usr/bin/env bash
# The project under AddressSanitizer + UndefinedBehaviorSanitizer (GCC), in its own build tree,
# with the test suite run under it (docs/reliability.md).
#
#   scripts/sanitize.sh [CTEST_ARGS...]         everything (compiler, runtime, tools) into
#                                               build-sanitize/, then every ctest test
#   scripts/sanitize.sh --fast [CTEST_ARGS...]  the runtime and its unit tests only
#                                               (-DAMP_ENABLE_COMPILER=OFF) into
#                                               build-sanitize-fast/, then the unit tests
#   scripts/sanitize.sh --ci [CTEST_ARGS...]    what CI runs (scripts/test.sh): the readers of
#                                               hostile input only, the tensor-file and plan
#                                               libraries and their unit tests (TensorIOTest,
#                                               amp-plan-tests; no devices, no kernels) into
#                                               build-sanitize-ci/ (a few minutes from cold)
#
# Extra arguments go to ctest (e.g. -R TensorIO, -LE e2e). AMP_SANITIZE_DIR overrides the build
# directory; AMP_JOBS the parallelism (default 2). Any sanitizer report fails the test that
# produced it: UBSan does not recover, ASan halts, LeakSanitizer runs at every exit.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mode=full
case "${1:-}" in
  --fast) mode=fast; shift ;;
  --ci) mode=ci; shift ;;
esac
jobs=${AMP_JOBS:-2}
"$root/scripts/setup.sh"

flags="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
targets=()
if [ "$mode" = fast ]; then
  build=${AMP_SANITIZE_DIR:-$root/build-sanitize-fast}
  extra=(-DAMP_ENABLE_COMPILER=OFF)
  labels=(-L unit)
elif [ "$mode" = ci ]; then
  build=${AMP_SANITIZE_DIR:-$root/build-sanitize-ci}
  extra=(-DAMP_ENABLE_COMPILER=OFF)
  targets=(--target TensorIOTest amp-plan-tests)
  # The tests of those two binaries (gtest suite names); the binaries not built register none.
  labels=(-L unit -R '^(Io[A-Za-z]*|Bundle|Init|MemoryLayout|PlanValidation)\.')
else
  build=${AMP_SANITIZE_DIR:-$root/build-sanitize}
  extra=(-DMLIR_DIR=/usr/lib/llvm-19/lib/cmake/mlir
         -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-19/build/utils/lit/lit.py)
  labels=()
fi

start=$(date +%s)
if [ ! -f "$build/build.ninja" ]; then
  # -O1 -g1: line tables for the reports' stack traces at a fraction of -O2 -g's build time.
  cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ \
    "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1" "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1" \
    "-DCMAKE_C_FLAGS=$flags" "-DCMAKE_CXX_FLAGS=$flags" \
    "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address,undefined" \
    "-DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=address,undefined" \
    "${extra[@]}"
fi
CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root} cmake --build "$build" -j "$jobs" "${targets[@]}"
built=$(date +%s)
echo "sanitize: built $build in $((built - start)) s"

# The options every sanitized process runs with (docs/reliability.md explains each exception).
# allow_user_poisoning=0: LLVM's BumpPtrAllocator poisons its slabs from instrumented header code
# while Debian's uninstrumented libMLIR hands the memory out without unpoisoning it, so ampc,
# amp-opt and the compiler tests would stop on a false use-after-poison at context creation.
# detect_leaks is ASan's default on Linux; it is spelled out so nobody wonders.
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:abort_on_error=0:detect_stack_use_after_return=1:check_initialization_order=1:strict_init_order=1:detect_odr_violation=2:allow_user_poisoning=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
export LSAN_OPTIONS="suppressions=$root/scripts/sanitize.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
status=0
ctest --test-dir "$build" --output-on-failure -j "$jobs" "${labels[@]}" "$@" || status=$?
echo "sanitize: tests took $(( $(date +%s) - built )) s, $(( $(date +%s) - start )) s in all"
exit $status
