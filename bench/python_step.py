#!/usr/bin/python3
"""The Python package's overhead: ampc.Trainer.step against amp-run on the same bundle, one run.

Compiles examples/mlp.mlir (Fashion-MNIST MLP, batch 128) once, then alternates ROUNDS rounds of
`amp-run BUNDLE --steps=S --data=fashion-mnist` (its summary's median step_time_ms: from a step's
launch to its log, batch gathering included) and of a Python loop calling trainer.step(x, y) on the
same bundle with batches sliced from Fashion-MNIST in memory (the median wall time of one call,
feeds checked and bound included). Prints both medians and their ratio; the target is <= 1.05.

    PYTHONPATH=build/python /usr/bin/python3 bench/python_step.py [--precision bf16] [--steps 400]
"""
import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FASHION = "/usr/share/datasets/fashion-mnist"


def fashion_train():
    with gzip.open(f"{FASHION}/train-images-idx3-ubyte.gz") as f:
        x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 784).astype(np.float32) / 255.0
    with gzip.open(f"{FASHION}/train-labels-idx1-ubyte.gz") as f:
        y = np.frombuffer(f.read(), np.uint8, offset=8).astype(np.int64)
    return x, y


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--precision", default="bf16")
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--bindir", default=os.path.join(ROOT, "build", "bin"))
    args = parser.parse_args()
    sys.path.insert(0, os.path.join(os.path.dirname(args.bindir), "python"))
    import ampc

    work = tempfile.mkdtemp(prefix="ampc-bench-")
    bundle = os.path.join(work, "mlp.ampx")
    ampc.compile(os.path.join(ROOT, "examples", "mlp.mlir"), precision=args.precision, output=bundle)
    x, y = fashion_train()
    batches = [(np.ascontiguousarray(x[i:i + 128]), np.ascontiguousarray(y[i:i + 128]))
               for i in range(0, len(x) - 127, 128)]
    cli, python = [], []
    for _ in range(args.rounds):
        summary = os.path.join(work, "summary.json")
        subprocess.run([os.path.join(args.bindir, "amp-run"), bundle, "--data=fashion-mnist", f"--steps={args.steps}",
                        f"--summary={summary}", "--log-every=1000000", "--eval-every=1000000"],
                       check=True, stdout=subprocess.DEVNULL)
        cli.append(json.load(open(summary))["step_time_ms"])
        trainer = ampc.Trainer(bundle, device="cpu")
        times = []
        for k in range(args.steps):
            xb, yb = batches[k % len(batches)]
            start = time.perf_counter()
            trainer.step(xb, yb)
            times.append(1000 * (time.perf_counter() - start))
        python.append(statistics.median(times))
    a, p = statistics.median(cli), statistics.median(python)
    print(json.dumps({"model": "mlp_b128", "precision": args.precision, "amp_run_step_ms": a, "python_step_ms": p,
                      "ratio": p / a, "rounds": {"amp_run": cli, "python": python},
                      "load_average": os.getloadavg()[0]}))
    print(f"MLP b128 {args.precision}: amp-run {a:.3f} ms/step, ampc.Trainer.step {p:.3f} ms/step, "
          f"ratio {p / a:.3f} (target <= 1.05: {'PASS' if p / a <= 1.05 else 'MISS'})")


if __name__ == "__main__":
    main()
