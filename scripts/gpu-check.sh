#!/usr/bin/env bash
# The GPU check of the cuda device (docs/cuda-device.md, "The GPU check"), in two halves:
#
#   scripts/gpu-check.sh --package [FILE]    here, after scripts/build.sh: packs what the GPU machine
#                                            runs into FILE (default .gpu-check/package.tar.xz)
#   scripts/gpu-check.sh [--dry-run] [FILE]  on the GPU machine: unpacks FILE, runs the GPU tests and
#                                            the benchmarks, writes logs and results.json under $OUT
#                                            (default .gpu-check/out); ends within 570 s, before the
#                                            device machine's 10-minute command limit
#
# The GPU machine this is for (an H200 host with the driver, nvcc 13, CMake, GCC and PyTorch, but no
# Debian -dev packages, no MLIR and no network) cannot build the project: the runtime needs Abseil,
# oneDNN, Open MPI and GoogleTest. So the package carries the runtime-only binaries built here (amp-run,
# the cuda test binaries, amp-bench-cuda-gemm), the shared libraries they load that such a machine
# lacks, the cuda bundles compiled here by ampc (NVRTC needs no GPU), and the benchmark scripts.
# The binaries find the packed libraries through their RPATH ($ORIGIN/../lib, CMakeLists.txt), never
# through LD_LIBRARY_PATH, which the machine's python3 and PyTorch would inherit. cuBLASLt (540 MB)
# is not packed: the machine's CUDA toolkit has it, and a stage finds it or says where it looked.
#
# --dry-run runs everything short of the GPU, on any x86-64 machine: the package's libraries, the
# executor's dry-run tests, `amp-run --device=cuda --dry-run` on every bundle, the conformance suite,
# and the GPU tests with the GPU hidden (each skips).
#
# Every test binary reads its bundles from the package through AMP_TEST_BUNDLE_DIR and writes
# gtest's JSON; the run ends with a table of tests run, passed, failed and skipped per stage. On
# the GPU machine a skipped test, or a binary that ran no test, is a failure.
# Exit status: 0 when every check passed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mode=run
case "${1:-}" in
  --package) mode=package; shift ;;
  --dry-run) mode=dry; shift ;;
esac
package=${1:-$root/.gpu-check/package.tar.xz}

# runpath_to_origin LIB: LIB's RUNPATH (or RPATH) string becomes "$ORIGIN", overwritten in place in
# its .dynstr (a shorter string, padded with NULs: nothing moves), as chrpath -r does.
runpath_to_origin() {
  python3 - "$1" <<'EOF'
import struct, sys
path = sys.argv[1]
data = bytearray(open(path, "rb").read())
assert data[:4] == b"\x7fELF" and data[4] == 2 and data[5] == 1, "a 64-bit little-endian ELF file"
shoff, = struct.unpack_from("<Q", data, 0x28)
shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
dynamic = next(s for s in sections if s[1] == 6)  # SHT_DYNAMIC
dynstr = sections[dynamic[6]]                     # its sh_link: the string table
for off in range(dynamic[4], dynamic[4] + dynamic[5], 16):
    tag, value = struct.unpack_from("<qQ", data, off)
    if tag in (15, 29):  # DT_RPATH, DT_RUNPATH
        start = dynstr[4] + value
        end = data.index(b"\0", start)
        assert end - start >= len("$ORIGIN"), "a RUNPATH shorter than $ORIGIN"
        data[start:end] = b"$ORIGIN".ljust(end - start, b"\0")
open(path, "wb").write(data)
EOF
}

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
  for b in "${bins[@]}"; do
    cp "$build/bin/$b" "$stage/bin/"
    readelf -d "$build/bin/$b" | grep -q 'Library rpath: \[$ORIGIN/../lib' ||
      { echo "gpu-check: $b has no RPATH \$ORIGIN/../lib (CMakeLists.txt sets it): rebuild it" >&2; exit 1; }
  done
  # The cuda device dlopens cuBLASLt by its soname; the GPU machine's toolkit provides it.
  cublaslt=$(sed -n 's/^AMP_CUBLASLT:FILEPATH=//p' "$build/CMakeCache.txt")
  objdump -p "$cublaslt" | awk '$1 == "SONAME" {print $2}' >"$stage/cublaslt.soname"
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
  # Shared libraries outside the C runtime and the compiler's own (which any machine with GCC has);
  # the binaries' RPATH finds them in lib/.
  for b in "${bins[@]}"; do ldd "$build/bin/$b"; done | awk '$3 ~ /^\// {print $3}' | sort -u |
    grep -vE '/(libc|libm|libdl|libpthread|librt|ld-linux-x86-64|libstdc\+\+|libgcc_s)\.so' |
    while read -r lib; do cp -L "$lib" "$stage/lib/"; done
  # A library with its own RUNPATH (libmpi's, libopen-rte's: Open MPI's folder) has its dependencies
  # looked up there and never in the binaries' RPATH: point it at its own folder instead.
  for lib in "$stage"/lib/*; do
    readelf -d "$lib" | grep -qE '\((RUNPATH|RPATH)\)' || continue
    runpath_to_origin "$lib"
    readelf -d "$lib" | grep -qE '\((RUNPATH|RPATH)\).*\[\$ORIGIN\]$' ||
      { echo "gpu-check: could not point $(basename "$lib")'s RUNPATH at \$ORIGIN" >&2; exit 1; }
  done
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
# The one variable every test binary reads its bundles from (test/unit/cuda/TestBundles.h,
# test/unit/conformance): the package's, never the build folder compiled in, which is not there.
export AMP_TEST_BUNDLE_DIR="$dir/bundles"
results="$dir/results"  # gtest's JSON, one file per process, and the manifest the table reads
mkdir -p "$results"

# Time limits: 3x the longest of four dry runs on a 2-core build machine shared with other builds
# (docs/cuda-device.md, "The GPU check"). The GPU stages cannot be measured there; their limits are
# estimates, per test process and per stage. Whatever the limits, no stage runs past the deadline,
# so that the run ends with its table inside the device machine's 10-minute command limit.
deadline=$((SECONDS + ${AMP_GPU_CHECK_SECONDS:-570}))
failures=0
check() {  # check NAME SECONDS COMMAND...: runs it, logs it, counts a failure
  local name=$1 seconds=$2
  shift 2
  local start=$SECONDS left=$((deadline - SECONDS))
  if [ "$left" -lt 5 ]; then
    echo "gpu-check: FAIL $name (not run: the run's deadline has passed)"
    failures=$((failures + 1))
    return
  fi
  [ "$seconds" -le "$left" ] || seconds=$left
  if timeout "$seconds" bash -c '"$@"' _ "$@" >"$out/$name.log" 2>&1; then
    echo "gpu-check: PASS $name ($((SECONDS - start)) s)"
  else
    local status=$?
    echo "gpu-check: FAIL $name (exit $status$([ "$status" = 124 ] && echo ": over its $seconds s"), $((SECONDS - start)) s; $out/$name.log):"
    tail -n 20 "$out/$name.log" | sed 's/^/    /'
    failures=$((failures + 1))
  fi
}

# gtest STAGE BINARY [ARGS...]: the binary with its results as JSON for the table.
gtest() {
  local stage=$1 binary=$2
  shift 2
  local json="$results/$stage.$binary.json"
  printf '%s\t%s\t%s\n' "$stage" "$binary" "$json" >>"$results/manifest"
  "$dir/bin/$binary" --gtest_output="json:$json" "$@" && no_skip_on_the_gpu "$json"
}

# On the GPU machine a skip means a device that did not open: the stage fails (the table says which).
no_skip_on_the_gpu() {
  [ "$mode" != run ] || ! grep -q '"result": "SKIPPED"' "$1" || { echo "gpu-check: a test skipped on the GPU machine"; return 1; }
}

# each_test_in_its_own_process STAGE FILTER SECONDS: every test of amp-cuda-gpu-tests that FILTER
# selects, each in a process of its own under its own limit, so that a fault (which ends the
# process's CUDA context) or a hang in one leaves the others' verdicts standing.
each_test_in_its_own_process() {
  local stage=$1 filter=$2 seconds=$3 status=0 test
  local tests
  tests=$("$dir/bin/amp-cuda-gpu-tests" --gtest_list_tests --gtest_filter="$filter" |
    awk '/^[^ ]/ {suite = $1} /^  / {print suite $1}')
  [ -n "$tests" ] || { echo "no test matches $filter"; return 1; }
  for test in $tests; do
    echo "== $test"
    local json="$results/$stage.${test//\//_}.json"
    printf '%s\t%s\t%s\n' "$stage" amp-cuda-gpu-tests "$json" >>"$results/manifest"
    timeout "$seconds" "$dir/bin/amp-cuda-gpu-tests" --gtest_filter="$test" --gtest_output="json:$json" &&
      no_skip_on_the_gpu "$json" || status=1
  done
  return $status
}

# Every packed binary finds each library it loads in the package (through its RPATH) or in the C
# runtime and the compiler's (which any machine with GCC has), with no LD_LIBRARY_PATH.
package_libraries() {
  local b status=0
  for b in "$dir"/bin/*; do
    env -u LD_LIBRARY_PATH ldd "$b" | awk -v lib="$dir/lib/" -v rpath="$dir/bin/../lib/" -v bin="$(basename "$b")" '
      /=>/ && index($3, lib) != 1 && index($3, rpath) != 1 && $1 !~ /^(libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s)\.so/ {
        print bin ": " $1 " => " $3 " " $4 " (not from the package)"; bad = 1 }
      END { exit bad }' || status=1
  done
  return $status
}

# The libraries the cuda device dlopens and the package cannot carry (each is hundreds of MB):
# cuBLASLt, always, and NCCL, for data-parallel jobs. Each where the loader finds it, else in the
# CUDA toolkit's or PyTorch's folders (the nvidia.* wheels), linked into the package's lib/ where
# the binaries' RPATH looks.
cublaslt=$(cat "$dir/cublaslt.soname" 2>/dev/null || echo libcublasLt.so.13)
find_gpu_library() {  # find_gpu_library SONAME PYTHON_MODULE WHAT
  local soname=$1 module=$2 what=$3
  if { ldconfig -p 2>/dev/null || /sbin/ldconfig -p; } | grep -q "^[[:space:]]*$soname "; then
    echo "$soname: found by the loader"
    return 0
  fi
  local folders=("${CUDA_HOME:-/usr/local/cuda}/lib64" /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib
                 /usr/local/cuda-*/lib64)
  local wheel
  wheel=$(env -u PYTHONPATH python3 -c "import $module as m; print(list(m.__path__)[0] + '/lib')" 2>/dev/null) &&
    folders+=("$wheel")
  local f
  for f in "${folders[@]}"; do
    if [ -e "$f/$soname" ]; then
      ln -sf "$f/$soname" "$dir/lib/$soname"
      echo "$soname: $f/$soname"
      return 0
    fi
  done
  echo "$soname is missing: $what; looked in the loader's cache and ${folders[*]}"
  return 1
}
find_cublaslt() { find_gpu_library "$cublaslt" nvidia.cublas "the cuda device needs it (the CUDA 13 toolkit's cuBLAS)"; }
find_nccl() { find_gpu_library libnccl.so.2 nvidia.nccl "data-parallel training on the cuda device needs it (NCCL 2.10 or newer)"; }

dry_runs() {
  # The cuda targets' bundles (the rest are the cpu device's), those compiled with
  # `ampc --gemm-epilogues=cublaslt` (*_epilogues_*) among them.
  # A bundle compiled for several ranks needs mpirun, which the GPU machine lacks: its refusal to
  # run as one rank is what is checked here.
  local b log
  for b in "$dir"/bundles/*_sm_*.ampx; do
    echo "== $(basename "$b")"
    log=$("$dir/bin/amp-run" "$b" --device=cuda --dry-run 2>&1) && { echo "$log"; continue; }
    echo "$log"
    grep -q 'this job has 1; run it with mpirun' <<<"$log" || return 1
    echo "(compiled for several ranks: refused as one, as it should be)"
  done
}

# The tests' verdicts, per stage and binary, from gtest's JSON: the table, and results.json's sibling
# tests.json. Fails for a process that left no JSON (it crashed or was killed), a binary that ran
# no test, and on the GPU machine for any skip. The dry run hides the GPU from the GPU stages, whose
# tests therefore all skip there.
table() {
  python3 - "$mode" "$results/manifest" "$out/tests.json" <<'EOF'
import json, os, sys
mode, manifest, summary = sys.argv[1:4]
gpu_stages = {"kernels", "gpu-tests", "nccl"}
rows, order, broken = {}, [], []
for line in open(manifest):
    stage, binary, path = line.rstrip("\n").split("\t")
    key = (stage, binary)
    if key not in rows:
        rows[key] = {"stage": stage, "binary": binary, "run": 0, "passed": 0, "failed": 0, "skipped": 0,
                     "no result": 0, "failed tests": [], "skipped tests": []}
        order.append(key)
    row = rows[key]
    if not os.path.exists(path):
        row["no result"] += 1
        continue
    for suite in json.load(open(path))["testsuites"]:
        for t in suite["testsuite"]:
            if t.get("status") != "RUN":
                continue
            name = suite["name"] + "." + t["name"]
            if t.get("failures"):
                row["run"] += 1
                row["failed"] += 1
                row["failed tests"].append(name)
            elif t.get("result") == "SKIPPED":
                row["skipped"] += 1
                row["skipped tests"].append(name)
            else:
                row["run"] += 1
                row["passed"] += 1
print("%-15s %-24s %5s %7s %7s %8s %10s" % ("stage", "binary", "run", "passed", "failed", "skipped", "no result"))
verdicts = []
for key in order:
    r = rows[key]
    print("%-15s %-24s %5d %7d %7d %8d %10d" % (r["stage"], r["binary"], r["run"], r["passed"], r["failed"],
                                                 r["skipped"], r["no result"]))
    hidden_gpu = mode == "dry" and r["stage"] in gpu_stages
    if r["no result"]:
        verdicts.append("%s: %d process(es) of %s left no result (crashed or killed)" % (r["stage"], r["no result"], r["binary"]))
    if r["run"] == 0 and not hidden_gpu:
        verdicts.append("%s: %s ran no test" % (r["stage"], r["binary"]))
    if mode == "run" and r["skipped"]:
        verdicts.append("%s: %s skipped on the GPU machine: %s" % (r["stage"], r["binary"], ", ".join(r["skipped tests"][:5])))
    for name in r["failed tests"]:
        verdicts.append("%s: %s failed" % (r["stage"], name))
json.dump({"mode": mode, "rows": [rows[k] for k in order], "verdicts": verdicts}, open(summary, "w"), indent=1)
for v in verdicts:
    print("gpu-check: " + v)
sys.exit(1 if verdicts else 0)
EOF
}

summarise() {
  echo "gpu-check: the tests, from gtest's JSON ($out/tests.json):"
  if ! timeout 30 bash -c table | tee "$out/table.log"; then failures=$((failures + 1)); fi
}

export -f table gtest no_skip_on_the_gpu each_test_in_its_own_process package_libraries find_gpu_library find_cublaslt \
  find_nccl dry_runs
export dir out mode results cublaslt

check package-libraries 15 package_libraries
if [ "$mode" = dry ]; then
  # Measured (s, longest of four): executor-tests 5, dry-run 44, conformance 66, each GPU stage 1;
  # executor-tests grew to 8 s alone (47 tests, 2026-12) and passed 15 s under a loaded ctest -j2.
  echo "gpu-check: cuBLASLt, for a GPU run here (the dry run does not load it): $(find_cublaslt || true)"
  echo "gpu-check: NCCL, for the nccl stage of a GPU run here: $(find_nccl || true)"
  check executor-tests 30 gtest executor-tests amp-cuda-executor-tests
  check dry-run 135 dry_runs
  check conformance 200 gtest conformance amp-conformance-tests
  # The GPU stages' code paths with the GPU hidden: every test skips, and the table shows it.
  CUDA_VISIBLE_DEVICES= check kernels 30 each_test_in_its_own_process kernels 'CudaGpuParity/LibraryKernels.*' 10
  CUDA_VISIBLE_DEVICES= check gpu-tests 60 each_test_in_its_own_process gpu-tests '-CudaGpuParity/LibraryKernels.*:CudaGpuNccl.*' 10
  CUDA_VISIBLE_DEVICES= check nccl 30 each_test_in_its_own_process nccl 'CudaGpuNccl.*' 10
  summarise
  echo "gpu-check: dry run: $failures failure(s); stopped before the first kernel launch"
  exit $((failures > 0))
fi

check cublaslt 15 find_cublaslt
check nvidia-smi 20 nvidia-smi
# First every library kernel family, each in its own process, synchronising after every launch
# so that a fault names its kernel, plan step and place in the model; then the same families under
# compute-sanitizer's memcheck, where the machine has it.
AMP_CUDA_SYNC_EACH_LAUNCH=1 check kernels 120 each_test_in_its_own_process kernels 'CudaGpuParity/LibraryKernels.*' 40
sanitizer=$(command -v compute-sanitizer || ls "${CUDA_HOME:-/usr/local/cuda}"/bin/compute-sanitizer 2>/dev/null || true)
if [ -n "$sanitizer" ]; then
  AMP_CUDA_SYNC_EACH_LAUNCH=1 check sanitizer 120 "$sanitizer" --tool memcheck --error-exitcode 1 \
    "$dir/bin/amp-cuda-gpu-tests" --gtest_filter='CudaGpuParity/LibraryKernels.*' \
    --gtest_output="json:$results/sanitizer.json"
  printf '%s\t%s\t%s\n' sanitizer amp-cuda-gpu-tests "$results/sanitizer.json" >>"$results/manifest"
else
  echo "gpu-check: no compute-sanitizer on this machine: the sanitizer stage is left out"
fi
check gpu-tests 180 each_test_in_its_own_process gpu-tests '-CudaGpuParity/LibraryKernels.*:CudaGpuNccl.*' 60
# NCCL for real on this one GPU (a job of one rank through the library, whose results must be the
# plain copies' bits); the multi-GPU path is checked only up to ncclCommInitRank, by the dry run.
check nccl-library 15 find_nccl
check nccl 90 each_test_in_its_own_process nccl 'CudaGpuNccl.*' 40
# Every bundle's entries and a run of training steps against the reference, on the cpu device, the
# dry run and the GPU (whose cases, a third, skip in the dry run that measured the limit). The dry
# run of every bundle (dry-run) is left to the build machine: nothing there depends on the GPU.
check conformance 200 gtest conformance amp-conformance-tests
check executor-tests 30 gtest executor-tests amp-cuda-executor-tests
# The machine's own python3 and PyTorch: no packed library reaches them (the binaries they start
# find theirs through their RPATH).
check bench 240 python3 "$dir/bench/cuda_step.py" --bindir "$dir/bin" --bundles "$dir/bundles" --json "$out/results.json"
[ -f "$out/bench.log" ] && sed -n '/^GEMM/,$p' "$out/bench.log"
summarise
echo "gpu-check: $failures failure(s)"
exit $((failures > 0))
