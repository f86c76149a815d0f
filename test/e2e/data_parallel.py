#!/usr/bin/env python3
"""End-to-end data-parallel training: `mpirun -np 2 amp-run` on this machine (docs/data-parallel.md).

Usage: data_parallel.py BIN_DIR SRC_DIR SCENARIO [DEVICE]. Standard library only; needs Open MPI's
mpirun (scripts/packages.txt). Scenarios:
  equivalence  two ranks of batch 64 against one process of batch 128 (the same global batch), an
               overflow on one rank, K=4 accumulation's communication count, resume
  failure      a killed rank and a hung rank end the job with an error in bounded time (cpu only)
  stop         SIGTERM to one rank stops both after the same step, checkpointed (cpu only)
  accuracy     Fashion-MNIST, one epoch: two ranks reach one process's accuracy (cpu only)
  zero1        --shard-optimizer against the plain all-reduce path: bitwise equal without
               clipping, within tolerance with it; the collectives counted; resume; an overflow
               on one rank; a job of another size refused; per-rank state bytes
"""
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

from safetensors_file import f32_values, read as read_safetensors

BIN, SRC, SCENARIO = sys.argv[1], sys.argv[2], sys.argv[3]
DEVICE = sys.argv[4] if len(sys.argv) > 4 else "cpu"
WORK = tempfile.mkdtemp(prefix="amp-dp-%s-" % SCENARIO)
MPIRUN = shutil.which("mpirun") or shutil.which("mpiexec")
# Open MPI refuses root unless told; CI machines run as root.
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
AMP_RUN = os.path.join(BIN, "amp-run")
MLP = os.path.join(SRC, "examples", "mlp.mlir")


def check(cond, message):
    print(("ok: " if cond else "FAIL: ") + message, flush=True)
    if not cond:
        sys.exit(1)


def run(*args, ok=True):
    print("+", " ".join(args), flush=True)
    proc = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=ENV)
    print(proc.stdout[-3000:], flush=True)
    if ok and proc.returncode != 0:
        sys.exit("command failed with exit status %d" % proc.returncode)
    if not ok and proc.returncode == 0:
        sys.exit("command succeeded but should have failed")
    return proc.stdout


def mpi(*args, ok=True):
    return run(MPIRUN, "--oversubscribe", "-np", "2", AMP_RUN, *args, ok=ok)


def ampc(model, out, *flags):
    run(os.path.join(BIN, "ampc"), model, "--target=cpu:generic", "-o", out, *flags)


def mlp(batch):
    with open(MLP) as f:
        text = f.read().replace("tensor<128x", "tensor<%dx" % batch).replace("tensor<128xi64>", "tensor<%dxi64>" % batch)
    path = os.path.join(WORK, "mlp_b%d.mlir" % batch)
    with open(path, "w") as f:
        f.write(text)
    return path


def npy(fmt, shape, values):
    descr = {"f": "<f4", "q": "<i8"}[fmt]
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (descr, "".join("%d, " % d for d in shape))
    header += " " * (64 - (10 + len(header) + 1) % 64) + "\n"
    return (b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1") +
            struct.pack("<%d%s" % (len(values), fmt), *values))


def write_data(path, rows, huge_rows=()):
    """Fashion-MNIST-shaped rows (pixels in [0, 1), labels 0..9); `huge_rows` hold 60000s, which
    overflow the f16 output of the first layer."""
    import zipfile
    pixels = []
    for r in range(rows):
        pixels += [60000.0] * 784 if r in huge_rows else [(((r * 784 + i + 1) * 7919) % 251) / 251.0 for i in range(784)]
    labels = [(i * 3 + 1) % 10 for i in range(rows)]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        z.writestr("image.npy", npy("f", (rows, 784), pixels))
        z.writestr("label.npy", npy("q", (rows,), labels))


def summary_of(path):
    with open(path) as f:
        return json.load(f)


def all_reduce_steps(bundle_model, *flags):
    """The amp.all_reduce steps per entry of the plan ampc builds."""
    out = subprocess.run([os.path.join(BIN, "ampc"), bundle_model, "--target=cpu:generic", "--emit=plan", *flags],
                         stdout=subprocess.PIPE, check=True, text=True).stdout
    plan = json.loads(out)
    return {e["name"]: sum(s["op"] == "amp.all_reduce" for s in e["steps"]) for e in plan["entries"]}


def overflow_on_rank1(bundle):
    """4 unshuffled steps of an f16 bundle on 2 ranks, checkpointed after each, where rank 1's
    batches (the odd rows of the first 128) overflow: the summary."""
    bad = os.path.join(WORK, "bad.npz")
    write_data(bad, 256, huge_rows=set(range(1, 128, 2)))
    summary, ck = os.path.join(WORK, "f16.json"), os.path.join(WORK, "f16_ck")
    shutil.rmtree(ck, ignore_errors=True)
    mpi(bundle, "--device=" + DEVICE, "--data=" + bad, "--steps=4", "--shuffle=false", "--summary=" + summary,
        "--checkpoint=" + ck, "--checkpoint-every=1")
    return summary_of(summary)


def equivalence():
    data = os.path.join(WORK, "data.npz")
    write_data(data, 512)
    flags = ("--train", "--precision=f32", "--optimizer=sgd", "--lr=0.05")
    dp, single = os.path.join(WORK, "dp.ampx"), os.path.join(WORK, "single.ampx")
    ampc(mlp(64), dp, *flags, "--data-parallel")
    ampc(MLP, single, *flags)
    steps = 12
    dp_ck, single_ck = os.path.join(WORK, "dp_ck"), os.path.join(WORK, "single_ck")
    s_dp = os.path.join(WORK, "dp.json")
    mpi(dp, "--device=" + DEVICE, "--data=" + data, "--steps=%d" % steps, "--checkpoint=" + dp_ck,
        "--checkpoint-every=4", "--summary=" + s_dp)
    run(AMP_RUN, single, "--device=" + DEVICE, "--data=" + data, "--steps=%d" % steps, "--checkpoint=" + single_ck)
    s = summary_of(s_dp)
    per_step = all_reduce_steps(mlp(64), *flags, "--data-parallel")["train_step"]
    check(s["world_size"] == 2 and s["global_batch"] == 128 and s["batch"] == 64,
          "two ranks of batch 64: global batch 128 (%s)" % {k: s[k] for k in ("world_size", "global_batch", "batch")})
    check(s["replica_checks"] == 3, "at steps 4, 8 and 12 both ranks' params and state hashed bitwise equal")
    check(per_step == 3 and s["all_reduce_calls"]["train_step"] == steps * per_step,
          "one gradient bucket, found_inf and the loss: %d collectives per step, %d in %d steps" %
          (per_step, s["all_reduce_calls"]["train_step"], steps))
    a, meta = read_safetensors(os.path.join(dp_ck, "checkpoint.safetensors"))
    b, _ = read_safetensors(os.path.join(single_ck, "checkpoint.safetensors"))
    check(meta.get("world_size") == "2", "the checkpoint records its world size")
    worst, scale = 0.0, 0.0
    for name in a:
        if name.startswith("fc") and not name.endswith("momentum_buffer"):
            x, y = f32_values(a[name][2]), f32_values(b[name][2])
            worst = max(worst, max(abs(p - q) for p, q in zip(x, y)))
            scale = max(scale, max(abs(q) for q in y))
    # The two runs differ only in rounding: a mean over 128 examples against the mean of two means
    # over 64, each step.
    check(worst <= 1e-5 * max(1.0, scale),
          "2 ranks x batch 64 = 1 process x batch 128 after %d SGD steps: max |param difference| %.3g "
          "(params up to %.3g; tolerance 1e-5 relative)" % (steps, worst, scale))

    # Resuming: the same world size continues bitwise; another is refused.
    half = os.path.join(WORK, "half_ck")
    mpi(dp, "--device=" + DEVICE, "--data=" + data, "--steps=%d" % (steps // 2), "--checkpoint=" + half)
    mpi(dp, "--device=" + DEVICE, "--data=" + data, "--steps=%d" % (steps - steps // 2), "--checkpoint=" + half,
        "--resume")
    c, _ = read_safetensors(os.path.join(half, "checkpoint.safetensors"))
    check(sorted(a) == sorted(c) and all(a[k] == c[k] for k in a),
          "6 steps + resume + 6 steps on 2 ranks end bitwise where 12 straight steps end")
    out = run(AMP_RUN, dp, "--device=" + DEVICE, "--data=" + data, "--steps=1", "--checkpoint=" + half, "--resume",
              ok=False)
    check("written by a job of 2 rank(s), this job has 1" in out, "resuming a 2-rank checkpoint in 1 process is refused")
    out = mpi(single, "--device=" + DEVICE, "--data=" + data, "--steps=1", ok=False)
    check("not compiled with --data-parallel" in out, "a bundle without --data-parallel is refused under mpirun")

    # One rank overflows: rank 1's first batch (the odd rows of the first 128) is huge in f16.
    f16 = os.path.join(WORK, "dp_f16.ampx")
    ampc(mlp(64), f16, "--train", "--precision=f16", "--optimizer=adamw", "--data-parallel")
    # --check-numerics on 2 ranks: gradient overflows under loss scaling are counted, not fatal
    # (the step's backward once counted as forward, its loss being the mean over ranks).
    huge = os.path.join(WORK, "dp_huge_scale.ampx")
    ampc(mlp(64), huge, "--train", "--precision=f16", "--init-scale=1099511627776", "--data-parallel")
    s_huge = os.path.join(WORK, "huge.json")
    mpi(huge, "--device=" + DEVICE, "--data=" + data, "--steps=12", "--check-numerics", "--summary=" + s_huge)
    s = summary_of(s_huge)
    check(s["gradient_overflow_steps"] >= 5 and s["gradient_overflow_steps"] == s["overflow_steps"],
          "--check-numerics on 2 ranks counts the gradient overflows (%d of 12 steps; first: %s)" %
          (s["gradient_overflow_steps"], s.get("first_gradient_overflow")))

    s = overflow_on_rank1(f16)
    # Two steps per epoch: rank 1's huge batch comes back at step 3.
    check(s["first_overflow_steps"] == [1, 3] and s["overflow_steps"] == 2 and s["skipped_steps"] == 2,
          "an overflow on rank 1 only: rank 0, whose batches were finite, skipped steps 1 and 3 too (%s)" %
          s["first_overflow_steps"])
    check(s["replica_checks"] == 4 and s["final_scale"] == 16384.0,
          "both ranks held bitwise-equal params and scaler state after every step; the scale backed off twice, "
          "to %g, on both" % s["final_scale"])

    # Accumulation: only the window's last micro-batch communicates.
    acc = os.path.join(WORK, "dp_acc.ampx")
    acc_flags = ("--train", "--precision=bf16", "--accumulate=4", "--data-parallel")
    ampc(mlp(16), acc, *acc_flags)
    counts = all_reduce_steps(mlp(16), *acc_flags)
    s_acc = os.path.join(WORK, "acc.json")
    mpi(acc, "--device=" + DEVICE, "--data=" + data, "--steps=5", "--summary=" + s_acc)
    calls = summary_of(s_acc)["all_reduce_calls"]
    check(counts.get("accumulate", 0) == 0 and calls == {"train_step": 5 * counts["train_step"], "accumulate": 0},
          "K=4: %d collectives per optimizer step, none in the 15 accumulate calls (%s)" % (counts["train_step"], calls))


def floats(tensor):
    return f32_values(tensor[2])


def zero1():
    data = os.path.join(WORK, "data.npz")
    write_data(data, 512)
    steps = 12

    def train(bundle, name, *extra):
        ck, summary, metrics = (os.path.join(WORK, name + x) for x in ("_ck", ".json", ".jsonl"))
        mpi(bundle, "--device=" + DEVICE, "--data=" + data, "--steps=%d" % steps, "--checkpoint=" + ck,
            "--checkpoint-every=4", "--summary=" + summary, "--metrics=" + metrics, *extra)
        tensors, meta = read_safetensors(os.path.join(ck, "checkpoint.safetensors"))
        with open(metrics) as f:
            records = [json.loads(line) for line in f if '"kind":"step"' in line]
        return tensors, meta, summary_of(summary), records

    # Without clipping every update is elementwise, and a reduce-scatter of 2 ranks adds the same
    # two quotients as the all-reduce: ZeRO-1 is bitwise the plain path, moments included.
    flags = ("--train", "--precision=bf16", "--optimizer=adamw", "--data-parallel")
    plain, zero = os.path.join(WORK, "plain.ampx"), os.path.join(WORK, "zero.ampx")
    ampc(mlp(64), plain, *flags)
    ampc(mlp(64), zero, *flags, "--shard-optimizer", "--world-size=2")
    a, meta_a, s, _ = train(zero, "zero")
    b, meta_b, _, _ = train(plain, "plain")
    check(sorted(a) == sorted(b) and all(a[k] == b[k] for k in a) and meta_a["sha256"] == meta_b["sha256"],
          "ZeRO-1 AdamW (bf16): after %d steps the checkpoint (params, moments gathered whole, scaler) is bitwise "
          "the plain all-reduce path's" % steps)
    check(s["replica_checks"] == 3, "at steps 4, 8 and 12 both ranks' params and gathered state hashed equal")
    calls = (s["reduce_scatter_calls"]["train_step"], s["all_gather_calls"]["train_step"],
             s["all_reduce_calls"]["train_step"])
    check(calls == (steps, steps, 2 * steps),
          "per step: 1 reduce-scatter (one bucket), 1 all-gather, 2 all-reduces (found_inf, loss): %s" % (calls,))

    # The plan's state: each moment is a chunk of ceil(numel / 2) elements, marked with its param.
    plan = json.loads(subprocess.run([os.path.join(BIN, "ampc"), mlp(64), "--target=cpu:generic", "--emit=plan",
                                      *flags, "--shard-optimizer", "--world-size=2"],
                                     stdout=subprocess.PIPE, check=True, text=True).stdout)
    params = {b["name"]: b for b in plan["buffers"] if b["kind"] == "param"}
    sharded = [b for b in plan["buffers"] if b.get("shard_of")]
    numel = lambda shape: eval("*".join(map(str, shape)) or "1")
    whole = sum(numel(params[b["shard_of"]]["shape"]) for b in sharded)
    per_rank = sum(numel(b["shape"]) for b in sharded)
    check(len(sharded) == 2 * len(params) and all(numel(b["shape"]) == (numel(params[b["shard_of"]]["shape"]) + 1) // 2
                                                  for b in sharded),
          "every exp_avg/exp_avg_sq is its param's chunk over 2 ranks: %d bytes per rank instead of %d" %
          (4 * per_rank, 4 * whole))

    # Resume continues bitwise: each rank takes its chunk of the checkpoint's whole moments.
    half = os.path.join(WORK, "half_ck")
    mpi(zero, "--device=" + DEVICE, "--data=" + data, "--steps=%d" % (steps // 2), "--checkpoint=" + half)
    mpi(zero, "--device=" + DEVICE, "--data=" + data, "--steps=%d" % (steps - steps // 2), "--checkpoint=" + half,
        "--resume")
    c, _ = read_safetensors(os.path.join(half, "checkpoint.safetensors"))
    check(all(a[k] == c[k] for k in a), "6 steps + resume + 6 steps end bitwise where 12 straight steps end")
    out = run(AMP_RUN, zero, "--device=" + DEVICE, "--data=" + data, "--steps=1", ok=False)
    check("shards the optimizer state over 2 ranks" in out and "this job has 1" in out,
          "the bundle compiled for 2 ranks is refused in a single process")

    # With clipping the global norm is the square root of the sum of each rank's squared chunk
    # norm: the same value summed in another order (sequential f32 sums over 10^5 elements differ
    # by ~1e-5 relative), so the two paths agree within a tolerance, not bitwise.
    flags = ("--train", "--precision=f16", "--optimizer=sgd", "--momentum=0.9", "--clip-grad-norm=0.5",
             "--data-parallel")
    ampc(mlp(64), plain, *flags)
    ampc(mlp(64), zero, *flags, "--shard-optimizer", "--world-size=2")
    a, _, s, ra = train(zero, "zero_clip")
    b, _, _, rb = train(plain, "plain_clip")
    norm_gap = max(abs(x["grad_norm"] - y["grad_norm"]) / y["grad_norm"] for x, y in zip(ra, rb))
    check(norm_gap <= 1e-4, "the clip norms agree within 1e-4 relative at every step (worst %.2g)" % norm_gap)
    worst, scale = 0.0, 0.0
    for name in a:
        if name.startswith("fc") and a[name][0] == "F32" and not name.endswith("momentum_buffer"):
            x, y = floats(a[name]), floats(b[name])
            worst = max(worst, max(abs(p - q) for p, q in zip(x, y)))
            scale = max(scale, max(abs(q) for q in y))
    check(worst <= 1e-5 * max(1.0, scale), "ZeRO-1 SGD+momentum (f16, clip 0.5) = the plain path after %d steps: "
          "max |param difference| %.3g (params up to %.3g; tolerance 1e-5 relative)" % (steps, worst, scale))
    check(s["all_reduce_calls"]["train_step"] == 3 * steps, "clipping adds one all-reduce (the squared norms)")

    # One rank overflows: rank 1's batches are huge in f16; both ranks skip, the scale stays equal.
    s = overflow_on_rank1(zero)
    check(s["first_overflow_steps"] == [1, 3] and s["skipped_steps"] == 2 and s["replica_checks"] == 4,
          "an overflow on rank 1 only: both ranks skipped steps 1 and 3 and held equal params, moments and "
          "scale after every step (final scale %g)" % s["final_scale"])


def rank_pid(marker, rank):
    """The pid of the amp-run of `rank` whose command line contains `marker`."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmd = f.read().decode(errors="replace").split("\0")
            with open("/proc/%s/environ" % pid, "rb") as f:
                env = f.read().decode(errors="replace").split("\0")
        except OSError:
            continue
        if cmd and cmd[0].endswith("amp-run") and marker in cmd and "OMPI_COMM_WORLD_RANK=%d" % rank in env:
            return int(pid)
    return None


def failure():
    bundle = os.path.join(WORK, "dp.ampx")
    ampc(mlp(64), bundle, "--train", "--precision=bf16", "--data-parallel")
    data = os.path.join(WORK, "data.npz")
    write_data(data, 256)
    for how in ("kill", "hang"):
        args = [MPIRUN, "--oversubscribe", "-np", "2", AMP_RUN, bundle, "--device=cpu", "--data=" + data,
                "--steps=1000000", "--log-every=1", "--comm-timeout=3"]
        print("+", " ".join(args), flush=True)
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=ENV)
        for line in proc.stdout:
            if " step " in line:
                break
        pid = rank_pid(bundle, 1)
        check(pid is not None, "found rank 1's process")
        start = time.time()
        os.kill(pid, signal.SIGKILL if how == "kill" else signal.SIGSTOP)
        try:
            out = proc.communicate(timeout=90)[0]
        except subprocess.TimeoutExpired:
            proc.kill()
            out = proc.communicate()[0]
        elapsed = time.time() - start
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
        print(out[-2500:], flush=True)
        check(proc.returncode not in (0, None) and elapsed < 60,
              "rank 1 %s: the job exited with status %s after %.1f s" %
              ("killed" if how == "kill" else "stopped (SIGSTOP)", proc.returncode, elapsed))
        if how == "kill":
            check("rank 1" in out and ("signal 9" in out or "Killed" in out), "mpirun names the dead rank")
        else:
            check("did not complete within 3 s" in out and "rank 0 of 2" in out,
                  "rank 0 gave up on the hung rank after --comm-timeout=3 and said why")


def stop():
    """SIGTERM to rank 1 only: the ranks agree to stop after the same step, rank 0 checkpoints it,
    and the run resumes from it."""
    bundle = os.path.join(WORK, "dp.ampx")
    ampc(mlp(64), bundle, "--train", "--precision=bf16", "--data-parallel")
    data = os.path.join(WORK, "data.npz")
    write_data(data, 256)
    ck, summary = os.path.join(WORK, "ck"), os.path.join(WORK, "s.json")
    args = [MPIRUN, "--oversubscribe", "-np", "2", AMP_RUN, bundle, "--device=" + DEVICE, "--data=" + data,
            "--steps=1000000", "--log-every=1", "--checkpoint=" + ck, "--summary=" + summary]
    print("+", " ".join(args), flush=True)
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=ENV)
    seen = 0
    for line in proc.stdout:
        seen += " step " in line
        if seen == 3:
            break
    pid = rank_pid(bundle, 1)
    check(pid is not None, "found rank 1's process")
    os.kill(pid, signal.SIGTERM)
    try:
        out = proc.communicate(timeout=90)[0]
    except subprocess.TimeoutExpired:
        proc.kill()
        out = proc.communicate()[0]
    print(out[-2000:], flush=True)
    s = summary_of(summary)
    _, meta = read_safetensors(os.path.join(ck, "checkpoint.safetensors"))
    check(s["interrupted"] and int(meta["step"]) == s["steps"] and s["replica_checks"] == 1,
          "SIGTERM on rank 1 alone: both ranks stopped after step %d, agreed on their state, and rank 0 saved it "
          "(exit status %s)" % (s["steps"], proc.returncode))
    mpi(bundle, "--device=" + DEVICE, "--data=" + data, "--steps=2", "--checkpoint=" + ck, "--resume",
        "--summary=" + summary)
    check(summary_of(summary)["steps"] == int(meta["step"]) + 2, "and the job resumed from that step")


def accuracy():
    dp, single = os.path.join(WORK, "dp.ampx"), os.path.join(WORK, "single.ampx")
    ampc(mlp(64), dp, "--train", "--precision=bf16", "--data-parallel")
    ampc(MLP, single, "--train", "--precision=bf16")
    s_dp, s_one = os.path.join(WORK, "dp.json"), os.path.join(WORK, "one.json")
    mpi(dp, "--device=cpu", "--data=fashion-mnist", "--epochs=1", "--summary=" + s_dp)
    run(AMP_RUN, single, "--device=cpu", "--data=fashion-mnist", "--epochs=1", "--summary=" + s_one)
    a, b = summary_of(s_dp), summary_of(s_one)
    check(a["steps"] == b["steps"] == 468, "one epoch is 468 steps of 128 examples either way")
    check(abs(a["eval_accuracy"] - b["eval_accuracy"]) <= 0.015,
          "Fashion-MNIST test accuracy: 2 ranks %.2f%%, 1 process %.2f%% (tolerance 1.5 points); median step "
          "%.2f ms (2 ranks of batch 64) vs %.2f ms (1 process, batch 128)" %
          (a["eval_accuracy"] * 100, b["eval_accuracy"] * 100, a["step_time_ms"], b["step_time_ms"]))


if not MPIRUN:
    print("SKIP: no mpirun (install openmpi-bin: scripts/setup.sh)")
    sys.exit(77)
try:
    {"equivalence": equivalence, "failure": failure, "stop": stop, "accuracy": accuracy, "zero1": zero1}[SCENARIO]()
finally:
    shutil.rmtree(WORK, ignore_errors=True)
