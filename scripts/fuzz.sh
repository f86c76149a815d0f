#!/usr/bin/env bash
# libFuzzer targets (fuzz/; docs/reliability.md).
#
#   scripts/fuzz.sh list                      the targets, one a line
#   scripts/fuzz.sh TARGET SECONDS [ARGS...]  install, configure and build build-fuzz/ (clang,
#                                             ASan + UBSan + libFuzzer), seed the corpus and fuzz
#                                             TARGET for SECONDS; ARGS go to libFuzzer
#   scripts/fuzz.sh TARGET repro FILE...      run TARGET once on each FILE (a crash artifact)
#
# The corpus lives in build-fuzz/corpus/TARGET (kept between runs, never committed); the seeds
# are regenerated into build-fuzz/seeds/TARGET by fuzz/make_seeds.py on every run. Crashes,
# leaks and timeouts are written to build-fuzz/artifacts/. Exit status: libFuzzer's (0: nothing
# found). AMP_FUZZ_DIR overrides the build directory, AMP_JOBS the build parallelism (2).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${AMP_FUZZ_DIR:-$root/build-fuzz}
targets=(npy npz safetensors idx bundle bundle-plan bundle-cuda checkpoint policy ir pipeline onnx)

if [ "${1:-}" = "list" ]; then
  printf '%s\n' "${targets[@]}"
  exit 0
fi
if [ $# -lt 2 ]; then
  echo "usage: scripts/fuzz.sh list | TARGET SECONDS [LIBFUZZER_ARGS...] | TARGET repro FILE..." >&2
  exit 2
fi
target=$1 seconds=$2
shift 2
if ! printf '%s\n' "${targets[@]}" | grep -qx -- "$target"; then
  echo "fuzz.sh: unknown target '$target' (scripts/fuzz.sh list)" >&2
  exit 2
fi

# What the project needs, plus what only fuzzing needs (clang, libFuzzer, libomp's omp.h).
"$root/scripts/setup.sh" packages-fuzz.txt

if [ ! -f "$build/build.ninja" ]; then
  # -O1 -g and no NDEBUG: LLVM/MLIR's header assertions (cast<>, ...) are checked in our code.
  cmake -G Ninja -S "$root" -B "$build" -DAMP_FUZZ=ON -DAMP_ENABLE_TESTS=OFF \
    -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g" "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g" \
    -DMLIR_DIR=/usr/lib/llvm-19/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-19/build/utils/lit/lit.py
fi
# The seeds are written by the normal build's ampc and amp-run when there is one (faster than
# sanitized ones, and the runtime-only targets then build no MLIR at all); otherwise by these.
main_build=${AMP_BUILD_DIR:-$root/build}
seed_tools=(ampc amp-run)
if [ -x "$main_build/bin/ampc" ] && [ -x "$main_build/bin/amp-run" ]; then seed_tools=(); fi
# flock: several targets may fuzz at once; their builds of the one tree take turns.
CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root} flock "$build/.build-lock" \
  cmake --build "$build" -j "${AMP_JOBS:-2}" --target "fuzz-$target" "${seed_tools[@]}"

export ASAN_SYMBOLIZER_PATH=${ASAN_SYMBOLIZER_PATH:-/usr/bin/llvm-symbolizer-19}
export ASAN_OPTIONS="detect_leaks=1:detect_stack_use_after_return=1:check_initialization_order=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
export LSAN_OPTIONS="suppressions=$root/scripts/sanitize.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
fuzzer="$build/bin/fuzz-$target"

if [ "$seconds" = "repro" ]; then
  exec "$fuzzer" -runs=1 "$@"
fi

# Seeds: the tools of the normal build when there is one (faster than the sanitized ones).
tools="$build/bin"
if [ ${#seed_tools[@]} -eq 0 ]; then tools="$main_build/bin"; fi
seeds="$build/seeds/$target" corpus="$build/corpus/$target" artifacts="$build/artifacts"
rm -rf "$seeds"
mkdir -p "$seeds" "$corpus" "$artifacts"
python3 "$root/fuzz/make_seeds.py" "$target" "$seeds" "$root" "$tools"

log="$build/fuzz-$target.log"
# -timeout: an input that runs this long is a hang. -rss_limit_mb: libFuzzer's default (2 GiB),
# also the malloc limit: a single allocation above it is reported as a bug.
# bundle-cuda's inputs are whole cuda bundles (about 5 MB of cubin and PTX each), and libFuzzer
# keeps its corpus in memory: a larger input limit and RSS, with single allocations still capped.
limits=(-rss_limit_mb=2048)
[ "$target" = "bundle-cuda" ] && limits=(-max_len=8388608 -rss_limit_mb=14000 -malloc_limit_mb=2048)
set +e
started=$SECONDS
"$fuzzer" -max_total_time="$seconds" -timeout=30 "${limits[@]}" -print_final_stats=1 \
  -artifact_prefix="$artifacts/$target-" "$@" "$corpus" "$seeds" 2>&1 | tee "$log" |
  grep --line-buffered -vE '^#[0-9]+[[:space:]]+(NEW|REDUCE|pulse)'
statuses=("${PIPESTATUS[@]}")
set -e
status=${statuses[0]}
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+/[0-9]+[a-zA-Z]*' "$log" | tail -1)
# The time measured, not the cap: -runs= or a finding ends a run early.
echo "fuzz.sh: $target: ${execs:-?} executions in $((SECONDS - started)) s of at most ${seconds} s (${rate:-?} exec/s), $cov, exit status $status"
exit "$status"
