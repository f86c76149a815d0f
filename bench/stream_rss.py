#!/usr/bin/python3
"""Peak memory of amp-run training from a streamed folder (--data=DIR) against the dataset's size.

Writes DIR/image.npy ([N, 784] f32, synthetic, GB-sized: --gb) and DIR/label.npy a block at a time
(never whole in memory), compiles examples/mlp.mlir (batch 128), and trains it for --steps steps on
that folder and on a 1,024-example folder, in one run. Prints, for both, amp-run's peak RSS (the
child's own, from wait4), the bundle's peak_memory_bytes (its summary: params, state and the
arenas) and the ratio RSS / (2 x peak + 64 MiB): the target is <= 1.

    /usr/bin/python3 bench/stream_rss.py --gb 4 [--dir /var/tmp/ampc-stream] [--keep]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np  # for writing the data (in a child process)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXED_MIB = 64


def write_folder(folder, rows, block=8192):
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(0)
    pattern = rng.random((block, 784), dtype=np.float32)
    image = np.lib.format.open_memmap(os.path.join(folder, "image.npy"), mode="w+", dtype=np.float32,
                                      shape=(rows, 784))
    for start in range(0, rows, block):
        n = min(block, rows - start)
        image[start:start + n] = pattern[:n]
        image.flush()
    del image
    np.save(os.path.join(folder, "label.npy"), (np.arange(rows) % 10).astype(np.int64))


def write_in_child(folder, rows):
    """The data is written by another process: a child's peak RSS starts from its parent's at fork
    (and survives exec), so this process must never have mapped the data itself."""
    subprocess.run([sys.executable, os.path.abspath(__file__), "--write", folder, str(rows)], check=True)


def run(bindir, bundle, folder, steps, summary):
    args = [os.path.join(bindir, "amp-run"), bundle, "--data=" + folder, f"--steps={steps}", "--summary=" + summary,
            "--log-every=1000000"]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"amp-run failed: {err.decode()}")
    with open(summary) as f:
        return usage.ru_maxrss * 1024, json.load(f)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--gb", type=float, default=4.0)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--dir", default=None, help="where the data goes (default: a temporary folder)")
    parser.add_argument("--bindir", default=os.path.join(ROOT, "build", "bin"))
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--write", nargs=2, metavar=("DIR", "ROWS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.write:
        write_folder(args.write[0], int(args.write[1]))
        return
    work = args.dir or tempfile.mkdtemp(prefix="ampc-stream-")
    os.makedirs(work, exist_ok=True)
    try:
        bundle = os.path.join(work, "mlp.ampx")
        subprocess.run([os.path.join(args.bindir, "ampc"), os.path.join(ROOT, "examples", "mlp.mlir"), "--train",
                        "--precision=bf16", "-o", bundle], check=True)
        rows = int(args.gb * 2**30 / (784 * 4))
        big, small = os.path.join(work, "big"), os.path.join(work, "small")
        if not os.path.exists(os.path.join(big, "label.npy")):
            write_in_child(big, rows)
        write_in_child(small, 1024)
        results = {}
        for name, folder in (("small", small), ("big", big)):
            rss, summary = run(args.bindir, bundle, folder, args.steps, os.path.join(work, name + ".json"))
            peak = summary["peak_memory_bytes"]
            size = os.path.getsize(os.path.join(folder, "image.npy"))
            bound = 2 * peak + FIXED_MIB * 2**20
            results[name] = {"dataset_bytes": size, "max_rss_bytes": rss, "peak_memory_bytes": peak,
                             "ratio_to_bound": rss / bound, "step_time_ms": summary["step_time_ms"]}
            print(f"{name}: dataset {size / 2**20:,.0f} MiB, amp-run peak RSS {rss / 2**20:,.1f} MiB, bundle peak "
                  f"{peak / 2**20:,.1f} MiB, RSS / (2 x peak + {FIXED_MIB} MiB) = {rss / bound:.2f}, "
                  f"{summary['step_time_ms']:.2f} ms/step")
        grow = (results["big"]["max_rss_bytes"] - results["small"]["max_rss_bytes"]) / 2**20
        print(f"RSS grows by {grow:.1f} MiB for {results['big']['dataset_bytes'] / 2**30:.2f} GiB more data; "
              f"target RSS <= 2 x peak + {FIXED_MIB} MiB: "
              f"{'PASS' if results['big']['ratio_to_bound'] <= 1 else 'MISS'}")
        print(json.dumps(results))
    finally:
        if not args.keep and not args.dir:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
