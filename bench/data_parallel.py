#!/usr/bin/env python3
"""Data-parallel step time: 2 MPI ranks against 1 process, measured side by side in one run.

On Fashion-MNIST with the MLP of examples/mlp.mlir in bf16 (AdamW), every run takes --steps steps
and reports amp-run's median step time; the 2-rank runs also report the plan's communication time
per step on rank 0 (its collectives, waiting for the other rank included):

  1 process, batch 128, OMP_NUM_THREADS=1     the compute one rank does at batch 128
  1 process, batch 128, all cores (OpenMP)    what one process gets from the machine
  2 ranks x batch 64                          the same global batch (128) on 2 ranks
  2 ranks x batch 128                         twice the global batch: throughput scaling
  2 ranks x batch 64, --shard-optimizer       ZeRO-1 (reduce-scatter + sharded AdamW + all-gather)

Ratios: the 2-rank step time over the 1-process one at the same global batch, the 2-rank
throughput (examples per second) over 1 process, and ZeRO-1's step time over the plain 2-rank one. Needs mpirun (openmpi-bin); standard library only.

    python3 bench/data_parallel.py [--steps 300] [--bindir build/bin]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--bindir", default=os.path.join(ROOT, "build", "bin"))
    args = ap.parse_args()
    mpirun = shutil.which("mpirun")
    if not mpirun:
        sys.exit("data_parallel.py: no mpirun (install openmpi-bin)")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    work = tempfile.mkdtemp(prefix="amp-bench-dp-")
    try:
        with open(os.path.join(ROOT, "examples", "mlp.mlir")) as f:
            model = f.read()
        bundles = {}
        for batch, zero in ((64, False), (128, False), (64, True)):
            path = os.path.join(work, "mlp_b%d.mlir" % batch)
            with open(path, "w") as f:
                f.write(model.replace("tensor<128x", "tensor<%dx" % batch).replace("tensor<128xi64>", "tensor<%dxi64>" % batch))
            bundles[batch, zero] = os.path.join(work, "mlp_b%d%s.ampx" % (batch, "_zero" if zero else ""))
            subprocess.run([os.path.join(args.bindir, "ampc"), path, "--train", "--precision=bf16", "--optimizer=adamw",
                            "--data-parallel", "-o", bundles[batch, zero]] +
                           (["--shard-optimizer", "--world-size=2"] if zero else []), check=True)

        def run(label, batch, ranks, threads=None, zero=False):
            summary = os.path.join(work, "s.json")
            cmd = [os.path.join(args.bindir, "amp-run"), bundles[batch, zero], "--data=fashion-mnist",
                   "--steps=%d" % args.steps, "--log-every=1000000", "--summary=" + summary]
            if ranks > 1:
                cmd = [mpirun, "--oversubscribe", "-np", str(ranks)] + cmd
            run_env = dict(env, OMP_NUM_THREADS=str(threads)) if threads else env
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=run_env)
            with open(summary) as f:
                s = json.load(f)
            row = {"run": label, "ranks": ranks, "batch": batch, "global_batch": s["global_batch"],
                   "step_ms": s["step_time_ms"], "examples_per_s": s["global_batch"] / s["step_time_ms"] * 1000,
                   "communication_ms": s.get("communication_ms_per_step") if ranks > 1 else None}
            print(json.dumps(row), flush=True)
            return row

        print("load average: %.2f %.2f %.2f" % os.getloadavg(), flush=True)
        one_t1 = run("1 process, 1 thread", 128, 1, threads=1)
        one = run("1 process, OpenMP", 128, 1)
        same = run("2 ranks x batch 64", 64, 2)
        double = run("2 ranks x batch 128", 128, 2)
        zero = run("2 ranks x batch 64, ZeRO-1", 64, 2, zero=True)
        best_one = min(one_t1["step_ms"], one["step_ms"])
        print("step time at global batch 128: 2 ranks %.2f ms vs 1 process %.2f ms: ratio %.2f "
              "(communication %.2f ms per step on rank 0)" %
              (same["step_ms"], best_one, same["step_ms"] / best_one, same["communication_ms"]))
        print("throughput: 2 ranks x batch 128 %.0f examples per second vs 1 process %.0f: scaling %.2fx "
              "(communication %.2f ms per step on rank 0)" %
              (double["examples_per_s"], 128 / best_one * 1000, double["examples_per_s"] / (128 / best_one * 1000),
               double["communication_ms"]))
        print("ZeRO-1 at global batch 128: 2 ranks %.2f ms vs plain all-reduce %.2f ms: ratio %.2f "
              "(communication %.2f vs %.2f ms per step on rank 0)" %
              (zero["step_ms"], same["step_ms"], zero["step_ms"] / same["step_ms"], zero["communication_ms"],
               same["communication_ms"]))
        print("load average: %.2f %.2f %.2f" % os.getloadavg(), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
