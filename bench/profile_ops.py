#!/usr/bin/env python3
"""Time by operation of one bundle's train_step on the cpu device, as the best of several runs.

    python3 bench/profile_ops.py BUNDLE.ampx DATA.npz [--runs N] [--amp-run PATH] [--top K]

Each run is `amp-run BUNDLE --device=cpu --steps=2 --data=DATA --profile --summary=...`; the table
prints, for every op name, the smallest per-call ms any run measured (the machine's noise only ever
adds time), and the call's min and median over the runs. Give --amp-run a second binary (another
build of the tree) and alternate the two commands to compare kernels side by side: environment
variables such as AMP_CPU_FEATURES and ONEDNN_MAX_CPU_ISA pass through to amp-run.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bundle")
    ap.add_argument("data")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--amp-run", default=os.path.join(os.path.dirname(HERE), "build", "bin", "amp-run"))
    ap.add_argument("--top", type=int, default=16)
    args = ap.parse_args()
    best, calls = {}, []
    with tempfile.TemporaryDirectory(prefix="amp_profile_ops_") as tmp:
        summary = os.path.join(tmp, "summary.json")
        for _ in range(args.runs):
            p = subprocess.run([args.amp_run, args.bundle, "--device=cpu", "--steps=2", "--data=" + args.data,
                                "--profile", "--summary=" + summary], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
            if p.returncode != 0:
                sys.exit("amp-run failed:\n" + p.stderr[-2000:])
            with open(summary) as f:
                profile = json.load(f)["profile"]
            calls.append(profile["call_ms"])
            for op in profile["by_op"]:
                if op["op"] not in best or op["ms"] < best[op["op"]]["ms"]:
                    best[op["op"]] = op
    calls.sort()
    print("train_step call: min %.2f ms, median %.2f ms over %d runs (%s)" % (calls[0], calls[len(calls) // 2],
                                                                            len(calls), args.amp_run))
    for op in sorted(best.values(), key=lambda o: -o["ms"])[:args.top]:
        print("  %-26s %-18s %4d step(s) %9.3f ms" % (op["op"], op["category"], op["steps"], op["ms"]))


if __name__ == "__main__":
    main()
