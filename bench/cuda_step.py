#!/usr/bin/env python3
"""GPU benchmarks of the cuda device against PyTorch on the same GPU, in one run (scripts/gpu-check.sh).

    python3 bench/cuda_step.py --bindir DIR/bin --bundles DIR/bundles --json results.json

1. GEMM: amp-bench-cuda-gemm (our cuBLASLt path) against torch.matmul at 4096^3, bf16 and f16.
2. Training step: the bench bundles (bench/gen_mlp.py's MLP 4096 -> 4096 -> 4096 -> 4096, batch 512,
   mean squared error, SGD: the model of PyTorch's AMP recipe; compiled here for cuda:sm_90 in f32,
   bf16 and f16), and examples/transformer_lm.mlir (batch 8 x 32, AdamW lr 3e-3, on make_lm_data.py's
   sequences) in the same three precisions, each trained by
   `amp-run --device=cuda` on synthetic data (amp-run's median step time: steps are enqueued and
   timed by the delivery of their logs), against bench/cuda_pytorch.py's eager fp32, tf32, bf16
   autocast, f16 with GradScaler and torch.compile'd bf16 steps of the same model (steps back to
   back, one synchronisation at the end).
3. Convolutions: bench/models/cnn_bench.mlir (batch 128 of 3x32x32, two 3x3 convolutions), bf16,
   trained by amp-run with --conv=gemm (column gathers + cuBLASLt) and with --conv=direct (the exact
   direct kernels): the implicit GEMMs' speed-up, which tells whether cuDNN is worth adding.
Prints one table with the ratios and the targets of docs/cuda-device.md, and the JSON lines it read.
"""
import argparse
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from ampc_step import npy_bytes, write_mlp_npz  # noqa: E402


def write_regression_npz(path, rows, features, outputs, seed=0):
    """Inputs "image" and f32 targets "target" in [0, 1), as bench/gen_mlp.py --loss mse names them."""
    import array
    import random
    import zipfile
    rng = random.Random(seed)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        for name, cols in (("image", features), ("target", outputs)):
            a = array.array("f", (rng.random() for _ in range(rows * cols)))
            if sys.byteorder != "little":
                a.byteswap()
            z.writestr(name + ".npy", npy_bytes("<f4", (rows, cols), a.tobytes()))


def json_lines(cmd, env=None, timeout=240):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, timeout=timeout)
    sys.stderr.write(p.stderr)
    out = []
    for line in p.stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            out.append(json.loads(line))
    return p.returncode, out


# The step benchmarks: (model key, our bundle name pattern, title of its table).
MODELS = (("mlp", "bench_mlp4096_%s_sm_90.ampx", "MLP 4096x3 + MSE, batch 512, SGD"),
          ("transformer", "bench_lm_%s_sm_90.ampx", "examples/transformer_lm.mlir, batch 8 x 32, AdamW"))


def amp_run_step(a, bundle, data, tag, results, model, precision, extra=()):
    """amp-run --device=cuda --profile on `bundle`: its median step, host syncs and profile."""
    summary = os.path.join(a.workdir, "summary_%s.json" % tag)
    p = subprocess.run([os.path.join(a.bindir, "amp-run"), bundle, "--device=cuda", "--steps=%d" % a.steps,
                        "--data=" + data, "--summary=" + summary, "--log-every=1000000",
                        "--eval-every=1000000", "--profile"] + list(extra), stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=300)
    key = (model, precision)
    if p.returncode != 0:
        print("amp-run %s failed:\n%s" % (tag, p.stdout[-2000:]))
        results["step"][("ampc",) + key] = None
        return
    with open(summary) as f:
        s = json.load(f)
    results["step"][("ampc",) + key] = s.get("step_time_ms")
    results["syncs"][key] = s.get("host_syncs_per_step")
    # amp-run --profile's table: "  scaler/optimizer      0.123 ms    4.5%  7 operation(s)"
    for line in p.stdout.splitlines():
        m = re.match(r"^  (\S+)\s+([0-9.]+) ms\s+([0-9.]+)%\s+(\d+) operation", line)
        if m:
            results["profile"].setdefault(key, {})[m.group(1)] = {
                "ms": float(m.group(2)), "share": float(m.group(3)), "operations": int(m.group(4))}
    print("== %s\n%s" % (tag, p.stdout[p.stdout.find("profile of"):] if "profile of" in p.stdout else ""), end="")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bindir", required=True)
    ap.add_argument("--bundles", required=True)
    ap.add_argument("--workdir", default="/tmp/amp-cuda-bench")
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--torch-python", default=sys.executable)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    results = {"gemm": {}, "step": {}, "syncs": {}, "profile": {}}

    rc, lines = json_lines([os.path.join(a.bindir, "amp-bench-cuda-gemm")])
    for r in lines:
        if r["kind"] == "gemm":
            results["gemm"][("ampc", r["dtype"])] = r["tflops"]
    rc, lines = json_lines([a.torch_python, os.path.join(HERE, "cuda_pytorch.py"), "--steps", str(a.steps)], timeout=400)
    for r in lines:
        if r["kind"] == "gemm":
            results["gemm"][("torch", r["dtype"])] = r["tflops"]
        elif r["kind"] == "step":
            results["step"][("torch", r.get("model", "mlp"), r["mode"])] = r.get("ms")

    data = {"mlp": os.path.join(a.workdir, "mlp4096_mse.npz"), "transformer": os.path.join(a.workdir, "lm.npz")}
    if not os.path.exists(data["mlp"]):
        write_regression_npz(data["mlp"], 2 * 512, 4096, 4096)
    if not os.path.exists(data["transformer"]):
        # Next to this script in the GPU check's package; in the repository, in examples/.
        maker = next(p for p in (os.path.join(HERE, "make_lm_data.py"), os.path.join(HERE, "..", "examples", "make_lm_data.py"))
                     if os.path.exists(p))
        subprocess.run([sys.executable, maker, data["transformer"], "--sequences", "256"], check=True)
    for model, pattern, _ in MODELS:
        for precision in ("f32", "bf16", "f16"):
            bundle = os.path.join(a.bundles, pattern % precision)
            if os.path.exists(bundle):
                amp_run_step(a, bundle, data[model], "%s_%s" % (model, precision), results, model, precision)

    # cuBLASLt's training epilogues (the bundle compiled with `ampc --gemm-epilogues=cublaslt`) against
    # the exact generated kernels, bf16.
    for model, pattern, _ in MODELS:
        bundle = os.path.join(a.bundles, pattern % "bf16_epilogues")
        if os.path.exists(bundle):
            amp_run_step(a, bundle, data[model], "%s_bf16_epilogues" % model, results, model + "-epilogues", "bf16")

    # Convolutions: the implicit GEMMs against the direct kernels, same bundle, same data.
    cnn = os.path.join(a.bundles, "bench_cnn_bf16_sm_90.ampx")
    if os.path.exists(cnn):
        data["cnn"] = os.path.join(a.workdir, "cnn.npz")
        if not os.path.exists(data["cnn"]):
            write_mlp_npz(data["cnn"], 2 * 128, (3, 32, 32), 10)
        for algo in ("gemm", "direct"):
            amp_run_step(a, cnn, data["cnn"], "cnn_bf16_" + algo, results, "cnn-" + algo, "bf16", ["--conv=" + algo])

    def ratio(ours, theirs, higher_is_better):
        if not ours or not theirs:
            return "n/a"
        return "%.2fx" % ((ours / theirs) if higher_is_better else (theirs / ours))

    print("\nGEMM 4096^3 (TFLOP/s)       ours     torch    ours/torch   target >= 0.95")
    for dtype in ("bf16", "f16"):
        o, t = results["gemm"].get(("ampc", dtype)), results["gemm"].get(("torch", dtype))
        print("  %-24s %8s %8s %12s" % (dtype, o and "%.1f" % o, t and "%.1f" % t, ratio(o, t, True)))
    pairs = [("f32", "fp32"), ("f32", "tf32"), ("bf16", "bf16"), ("bf16", "compile-bf16"), ("f16", "f16")]
    for model, _, title in MODELS:
        print("\n%s: step (ms)   ours     torch    speed-up" % title)
        for ours, theirs in pairs:
            o, t = results["step"].get(("ampc", model, ours)), results["step"].get(("torch", model, theirs))
            target = {"bf16": ">= 1.3", "compile-bf16": ">= 1.0"}.get(theirs, "")
            print("  %-6s vs torch %-14s %8s %8s %10s  %s" % (ours, theirs, o and "%.3f" % o, t and "%.3f" % t,
                                                             ratio(o, t, False), target))
        print("  scaler + optimizer share of our step (amp-run --profile), target < 5%; host syncs per step, target 0")
        for precision in ("f32", "bf16", "f16"):
            share = results["profile"].get((model, precision), {}).get("scaler/optimizer", {}).get("share")
            syncs = results["syncs"].get((model, precision))
            print("    %-6s %8s %24s" % (precision, "n/a" if share is None else "%.1f%%" % share,
                                        "n/a" if syncs is None else "%.2f syncs/step" % syncs))
    print("\nbf16 step (ms) with ampc --gemm-epilogues: exact (generated kernels)  cublaslt (RELU_AUX/DRELU_BGRAD, GELU_AUX/DGELU_BGRAD)  speed-up")
    for model, _, title in MODELS:
        e, c = results["step"].get(("ampc", model, "bf16")), results["step"].get(("ampc", model + "-epilogues", "bf16"))
        print("  %-40s %10s %10s %9s" % (title[:40], e and "%.3f" % e, c and "%.3f" % c, ratio(c, e, False)))
    g, d = results["step"].get(("ampc", "cnn-gemm", "bf16")), results["step"].get(("ampc", "cnn-direct", "bf16"))
    print("\nCNN bench/models/cnn_bench.mlir, batch 128, bf16: step (ms)   --conv=gemm  --conv=direct  speed-up")
    print("  %-52s %10s %13s %9s" % ("", g and "%.3f" % g, d and "%.3f" % d, ratio(g, d, False)))
    gemm_share = results["profile"].get(("cnn-gemm", "bf16"), {}).get("GEMM", {}).get("share")
    print("  GEMM share of the --conv=gemm step (amp-run --profile): %s" % ("n/a" if gemm_share is None else "%.1f%%" % gemm_share))
    if a.json:
        flat = {name: {"_".join(k) if isinstance(k, tuple) else k: v for k, v in results[name].items()}
                for name in ("gemm", "step", "syncs", "profile")}
        with open(a.json, "w") as f:
            json.dump(flat, f, indent=1)
    # Nothing measured on our side is a failure of the run (a target missed is not: it is reported).
    ours = [results["gemm"].get(("ampc", d)) for d in ("bf16", "f16")] + \
           [results["step"].get(("ampc", m, p)) for m, _, _ in MODELS for p in ("f32", "bf16", "f16")] + \
           [results["step"].get(("ampc", "cnn-" + algo, "bf16")) for algo in ("gemm", "direct")]
    missing = sum(1 for v in ours if not v)
    if missing:
        print("\n%d of our measurements are missing (see the errors above)" % missing)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
