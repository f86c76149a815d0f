#!/usr/bin/env python3
"""ampc compile time versus model size.

For N in --sizes (default 1000,10000,100000, capped by --max-ops) bench/gen_chain.py writes a
model with N amp ops (a chain of elementwise ops on tensor<64x64xf32> params feeding an
mse_loss) and this script times three ampc invocations on it:

  plan        ampc M.mlir --emit=plan -o /dev/null
              (parse, verify, autocast to the default precision, build the plan, print it as JSON)
  train-plan  ampc M.mlir --train --precision=bf16 --optimizer=adamw --emit=plan -o /dev/null
              (the training compiler: autodiff, loss scaling, optimizer, fusion, plan as JSON)
  train       ampc M.mlir --train --precision=bf16 --optimizer=adamw -o M.ampx
              (everything a user waits for: train-plan plus, for the cpu target, the fused
              kernels compiled by the system C++ compiler for x86-64-v3 and v4, and the bundle)

Each is run --repeat times (default 3; 1 for N > 10000) and the fastest wall time is kept;
max RSS comes from wait4. Output: one JSON line per size and stage with seconds, us/op and the
growth ratio against the previous size (linear growth = 10x per 10x ops). Targets (checked by
bench/run.py): 10k ops compile in under 2 s; growth is linear (ratio <= 15 per 10x, i.e. at most
1.5x the time per op).

    python3 bench/ampc_compile.py [--max-ops 100000] [--sizes 1000,10000,100000]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import gen_chain  # noqa: E402

STAGES = {
    "plan": lambda m, out: ["--emit=plan", "-o", os.devnull],
    "train-plan": lambda m, out: ["--train", "--precision=bf16", "--optimizer=adamw", "--emit=plan", "-o", os.devnull],
    "train": lambda m, out: ["--train", "--precision=bf16", "--optimizer=adamw", "-o", out],
}
DEFAULT_STAGES = ["plan", "train-plan", "train"]


def timed(cmd):
    """(seconds, rc, max_rss_bytes, stderr)."""
    t0 = time.perf_counter()
    try:
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    except OSError as e:
        return 0.0, 127, 0, "cannot run %s: %s" % (cmd[0], e)
    # Read stderr before waiting so a chatty failure cannot block on a full pipe.
    err = p.stderr.read()
    _, status, usage = os.wait4(p.pid, 0)
    secs = time.perf_counter() - t0
    rc = os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode") else status
    p.returncode = rc  # reaped by wait4: keep Popen from waiting again
    p.stderr.close()
    rss = usage.ru_maxrss * 1024  # KiB on Linux
    return secs, rc, rss, err.decode(errors="replace")


def run(ampc, sizes, stages, repeat, workdir, emit=print):
    results = []
    prev = {}
    for n in sizes:
        mlir = os.path.join(workdir, "chain_%d.mlir" % n)
        with open(mlir, "w") as f:
            f.write(gen_chain.chain_mlir(n))
        for stage in stages:
            out = os.path.join(workdir, "chain_%d.ampx" % n)
            cmd = [ampc, mlir] + STAGES[stage](mlir, out)
            reps = repeat if repeat else (3 if n <= 10000 else 1)
            best, rss, rc, err = None, 0, 0, ""
            for _ in range(reps):
                secs, rc, r, err = timed(cmd)
                if rc != 0:
                    break
                best = secs if best is None else min(best, secs)
                rss = max(rss, r)
            if rc != 0:
                r = {"kind": "error", "bench": "compile", "ops": n, "stage": stage, "command": " ".join(cmd),
                     "error": err.strip()[-2000:]}
            else:
                r = {"kind": "compile", "ops": n, "stage": stage, "seconds": best, "us_per_op": best / n * 1e6,
                     "max_rss_bytes": rss, "repeat": reps, "command": " ".join(cmd)}
                if stage in prev:
                    pn, ps = prev[stage]
                    r["growth_vs"] = pn
                    r["growth"] = best / ps
                    r["ops_ratio"] = n / pn
                prev[stage] = (n, best)
                if os.path.exists(out) and stage == "train":
                    r["bundle_bytes"] = os.path.getsize(out)
                    os.remove(out)
            results.append(r)
            emit(json.dumps(r))
            sys.stdout.flush()
        os.remove(mlir)
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bindir", default=os.path.join(ROOT, "build", "bin"))
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--max-ops", type=int, default=100000, help="skip sizes above this (default 100000)")
    ap.add_argument("--stages", default=",".join(DEFAULT_STAGES), help="comma-separated: plan, train-plan, train")
    ap.add_argument("--repeat", type=int, default=0, help="runs per point, fastest kept (default 3, 1 above 10k ops)")
    args = ap.parse_args()
    ampc = os.path.join(args.bindir, "ampc")
    if not os.access(ampc, os.X_OK):
        raise SystemExit("ampc_compile: %s not found" % ampc)
    sizes = [int(s) for s in args.sizes.split(",") if int(s) <= args.max_ops]
    workdir = tempfile.mkdtemp(prefix="ampc_compile_")
    try:
        res = run(ampc, sizes, args.stages.split(","), args.repeat, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    sys.exit(1 if any(r["kind"] == "error" for r in res) else 0)


if __name__ == "__main__":
    main()
