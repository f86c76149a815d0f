#!/usr/bin/env python3
"""ampc/amp-run side of the training-step benchmark.

For each model: write the .mlir (MLPs via bench/gen_mlp.py; the transformer is
examples/transformer_lm.mlir as is), compile it for each precision with

    build/bin/ampc MODEL.mlir --train --precision=P --optimizer=adamw --lr=2e-3 -o X.ampx

train it with

    build/bin/amp-run X.ampx --device=D --steps=S --data=DATA.npz --summary=S.json

and read `step_time_ms` (amp-run's median over all S steps) and `peak_memory_bytes` from the
summary JSON. Data is synthetic, written here with the standard library: for the MLPs an npz with
"image" [4*batch, 784] f32 in [0, 1) and "label" [4*batch] i64 (or --mlp-data=fashion-mnist);
for the transformer examples/make_lm_data.py --sequences=512 (as test/e2e/e2e.py lm_learns).

Runs: every precision of --precisions (default f32,bf16,f16) on --device=cpu, and the precisions
of --reference-precisions (default f32) on --device=reference. Whether amp-run has --device=cpu
is found by trying it (one step of a tiny MLP); when it does not, the cpu runs fall back to
the reference device (--cpu-fallback=reference, the default: the rows are then labelled
"reference", not "cpu", and the cpu speed targets cannot be judged) or are skipped
(--cpu-fallback=skip), with a note on stderr and a {"kind": "note"} line.

Output: JSON lines on stdout, one {"kind": "step", "framework": "ampc", "model", "device",
"precision", "median_ms", "peak_memory_bytes", ...} per model x device x precision, errors as
{"kind": "error", ...}. Standard library only; any python3.

    python3 bench/ampc_step.py [--quick] [--models ID,...] [--devices cpu,reference]
"""
import argparse
import array
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import gen_mlp  # noqa: E402

# Imported models (bench/onnx_models.py, which exports them with --torch-python): id -> the ampc
# flags besides TRAIN_FLAGS. The reference device is a scalar oracle: a step of these takes minutes
# there, so they run on it only when asked (--reference-onnx).
ONNX_MODELS = {
    "onnx_resnet18_b128": ["--batch=128", "--loss=cross_entropy:logits"],
    "onnx_gpt_b16": ["--batch=16", "--loss=cross_entropy:logits,label=label"],
}

DEFAULT_MODELS = ["mlp_784-256-256-10_b128", "mlp_784-256-256-10_b256", "mlp_784-1024-1024-10_b256",
                  "transformer_lm", "onnx_resnet18_b128", "onnx_gpt_b16"]
TRANSFORMER = os.path.join(ROOT, "examples", "transformer_lm.mlir")
TRAIN_FLAGS = ["--train", "--optimizer=adamw", "--lr=2e-3"]


def parse_mlp_id(model_id):
    import re
    m = re.fullmatch(r"mlp_(\d+(?:-\d+)+)_b(\d+)", model_id)
    if not m:
        return None
    return [int(w) for w in m.group(1).split("-")], int(m.group(2))


def run_cmd(cmd, env=None):
    """subprocess.run that turns a failure to start (binary missing or being relinked) into rc 127."""
    try:
        return subprocess.run(cmd, capture_output=True, text=True, env=env)
    except OSError as e:
        return subprocess.CompletedProcess(cmd, 127, "", "cannot run %s: %s" % (cmd[0], e))


def note(msg):
    print("ampc_step: " + msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# Synthetic data (npz written with the standard library, like examples/make_lm_data.py)


def npy_bytes(descr, shape, payload):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (descr, "".join("%d, " % d for d in shape))
    pad = 64 - (10 + len(header) + 1) % 64
    header = header + " " * pad + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1") + payload


def write_mlp_npz(path, rows, features, classes, seed=0):
    """"image" [rows, features] f32 in [0, 1) (features: a count, or an image's shape) and "label" [rows] i64."""
    dims = tuple(features) if isinstance(features, (tuple, list)) else (features,)
    size = 1
    for d in dims:
        size *= d
    rng = random.Random(seed)
    img = array.array("f", (rng.random() for _ in range(rows * size)))
    lab = array.array("q", (rng.randrange(classes) for _ in range(rows)))
    if sys.byteorder != "little":
        img.byteswap()
        lab.byteswap()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        z.writestr("image.npy", npy_bytes("<f4", (rows,) + dims, img.tobytes()))
        z.writestr("label.npy", npy_bytes("<i8", (rows,), lab.tobytes()))


# ---------------------------------------------------------------------------------------------
# Tools


class Tools:
    def __init__(self, bindir, workdir, amp_run_args=(), threads=None):
        self.ampc = os.path.join(bindir, "ampc")
        self.amp_run = os.path.join(bindir, "amp-run")
        self.workdir = workdir
        self.amp_run_args = list(amp_run_args)
        self.env = dict(os.environ)
        if threads:
            # amp-run has no thread-count flag yet; OMP_NUM_THREADS is what an OpenMP runtime reads.
            self.env["OMP_NUM_THREADS"] = str(threads)
        for tool in (self.ampc, self.amp_run):
            if not os.access(tool, os.X_OK):
                raise SystemExit("ampc_step: %s not found (build the project first)" % tool)

    def compile(self, mlir, out, precision, extra=()):
        cmd = [self.ampc, mlir] + TRAIN_FLAGS + ["--precision=" + precision] + list(extra) + ["-o", out]
        t0 = time.perf_counter()
        p = run_cmd(cmd)
        return p, time.perf_counter() - t0, cmd

    def train(self, bundle, device, steps, data, summary):
        # --profile: after training, 10 more calls timed step by step (the summary's "profile");
        # the step time and loss are training's own.
        cmd = [self.amp_run, bundle, "--device=" + device, "--steps=%d" % steps, "--data=" + data,
               "--summary=" + summary, "--log-every=1000000", "--eval-every=1000000"] + \
              (["--profile"] if device == "cpu" else []) + self.amp_run_args
        t0 = time.perf_counter()
        p = run_cmd(cmd, self.env)
        return p, time.perf_counter() - t0, cmd


def cpu_device_available(tools):
    """(available, message): tries one training step of a tiny MLP on --device=cpu."""
    d = os.path.join(tools.workdir, "probe")
    os.makedirs(d, exist_ok=True)
    mlir, bundle = os.path.join(d, "probe.mlir"), os.path.join(d, "probe.ampx")
    data = os.path.join(d, "probe.npz")
    with open(mlir, "w") as f:
        f.write(gen_mlp.mlp_mlir(8, [784, 16, 10]))
    write_mlp_npz(data, 16, 784, 10)
    p, _, _ = tools.compile(mlir, bundle, "f32")
    if p.returncode != 0:
        return False, "ampc failed on the probe model: " + (p.stderr.strip() or p.stdout.strip())
    p, _, _ = tools.train(bundle, "cpu", 1, data, os.path.join(d, "probe.json"))
    if p.returncode != 0:
        return False, (p.stderr.strip() or p.stdout.strip()).splitlines()[-1]
    return True, "amp-run --device=cpu works"


# ---------------------------------------------------------------------------------------------
# One model


def model_sources(model_id, workdir, mlp_data="synthetic", torch_python="/usr/bin/python3"):
    """(model path for ampc, data argument for amp-run)."""
    if model_id == "transformer_lm":
        data = os.path.join(workdir, "lm.npz")
        if not os.path.exists(data):
            subprocess.run([sys.executable, os.path.join(ROOT, "examples", "make_lm_data.py"), data,
                            "--sequences=512"], check=True)
        return TRANSFORMER, data
    if model_id in ONNX_MODELS:
        model, data = (os.path.join(workdir, model_id + ext) for ext in (".onnx", ".npz"))
        if not (os.path.exists(model) and os.path.exists(data)):
            p = run_cmd([torch_python, os.path.join(HERE, "onnx_models.py"), "export", model_id, workdir])
            if p.returncode != 0:
                raise ValueError("exporting %s needs torch, torchvision and onnx in %s (Debian: python3-torch, "
                                 "python3-torchvision, python3-onnx): %s"
                                 % (model_id, torch_python, (p.stderr.strip() or p.stdout.strip())[-600:]))
        return model, data
    parsed = parse_mlp_id(model_id)
    if parsed is None:
        raise ValueError("unknown model id %r (transformer_lm, %s or mlp_W0-W1-..._bB)" % (model_id, ", ".join(ONNX_MODELS)))
    widths, batch = parsed
    mlir = os.path.join(workdir, model_id + ".mlir")
    with open(mlir, "w") as f:
        f.write(gen_mlp.mlp_mlir(batch, widths))
    if mlp_data != "synthetic":
        return mlir, mlp_data
    data = os.path.join(workdir, "mlp_%d_%d_b%d.npz" % (widths[0], widths[-1], batch))
    if not os.path.exists(data):
        write_mlp_npz(data, 4 * batch, widths[0], widths[-1])
    return mlir, data


def model_flags(model_id):
    """ampc flags the model needs besides TRAIN_FLAGS and --precision."""
    return list(ONNX_MODELS.get(model_id, []))


def run_model(tools, model_id, runs, steps_for, mlp_data="synthetic", ampc_args=(), torch_python="/usr/bin/python3",
              reference_onnx=False):
    """runs: [(label_device, actual_device, precision)]. Yields one result dict per run."""
    try:
        mlir, data = model_sources(model_id, tools.workdir, mlp_data, torch_python)
    except Exception as e:  # noqa: BLE001
        yield {"kind": "error", "framework": "ampc", "model": model_id, "error": str(e)}
        return
    bundles = {}
    for label, device, precision in runs:
        base = {"kind": "step", "framework": "ampc", "model": model_id, "device": label,
                "run_device": device, "precision": precision}
        if device == "reference" and model_id in ONNX_MODELS and not reference_onnx:
            yield dict(base, kind="skip", reason="minutes a step there (--reference-onnx)")
            continue
        if precision not in bundles:
            bundle = os.path.join(tools.workdir, "%s_%s.ampx" % (model_id, precision))
            p, secs, cmd = tools.compile(mlir, bundle, precision, model_flags(model_id) + list(ampc_args))
            bundles[precision] = (bundle, secs, p.returncode, (p.stderr or p.stdout).strip(), cmd)
        bundle, compile_s, rc, err, cmd = bundles[precision]
        if rc != 0:
            yield dict(base, kind="error", stage="ampc", command=" ".join(cmd), error=err[-2000:])
            continue
        steps = steps_for(device, model_id)
        summary = os.path.join(tools.workdir, "%s_%s_%s.json" % (model_id, device, precision))
        p, wall, cmd = tools.train(bundle, device, steps, data, summary)
        if p.returncode != 0:
            yield dict(base, kind="error", stage="amp-run", command=" ".join(cmd),
                       error=(p.stderr.strip() or p.stdout.strip())[-2000:])
            continue
        with open(summary) as f:
            s = json.load(f)
        yield dict(base, median_ms=s.get("step_time_ms"), peak_memory_bytes=s.get("peak_memory_bytes"),
                   steps=s.get("steps"), batch=s.get("batch"), first_loss=s.get("first_loss"),
                   final_loss=s.get("final_loss"), skipped_steps=s.get("skipped_steps"),
                   loss_scaling=s.get("loss_scaling"), summary_precision=s.get("precision"),
                   summary_device=s.get("device"), compile_s=compile_s, run_wall_s=wall,
                   persistent_bytes=s.get("persistent_bytes"), workspace_bytes=s.get("workspace_bytes"),
                   profile=s.get("profile"), command=" ".join(cmd))


def plan_runs(devices, precisions, reference_precisions, cpu_ok, cpu_fallback):
    """[(label, device, precision)] and notes."""
    runs, notes = [], []
    for dev in devices:
        if dev == "reference":
            runs += [("reference", "reference", p) for p in reference_precisions]
        elif dev == "cpu" and not cpu_ok:
            if cpu_fallback == "reference":
                notes.append("--device=cpu is not available: the cpu precisions (%s) run on --device=reference "
                             "instead (rows labelled 'reference'); the cpu speed targets cannot be judged"
                             % ",".join(precisions))
                runs += [("reference", "reference", p) for p in precisions]
            else:
                notes.append("--device=cpu is not available: the cpu rows are skipped")
        else:
            runs += [(dev, dev, p) for p in precisions]
    seen, unique = set(), []
    for r in runs:
        if r not in seen:
            seen.add(r)
            unique.append(r)
    return unique, notes


def add_common_args(ap):
    ap.add_argument("--bindir", default=os.path.join(ROOT, "build", "bin"), help="where ampc and amp-run are")
    ap.add_argument("--devices", default="cpu,reference", help="comma-separated (default cpu,reference)")
    ap.add_argument("--precisions", default="f32,bf16,f16", help="precisions on non-reference devices")
    ap.add_argument("--reference-precisions", default="f32", help="precisions on --device=reference")
    ap.add_argument("--cpu-fallback", choices=["reference", "skip"], default="reference",
                    help="what to do when amp-run has no --device=cpu (default: run on reference)")
    ap.add_argument("--steps", type=int, default=None, help="amp-run --steps on cpu (default 100, --quick 20)")
    ap.add_argument("--reference-steps", type=int, default=None,
                    help="amp-run --steps on reference (default 20, --quick 5)")
    ap.add_argument("--mlp-data", default="synthetic", help="'synthetic' (default) or an amp-run --data value, "
                    "e.g. fashion-mnist (then amp-run also evaluates on the test set after the last step)")
    ap.add_argument("--amp-run-arg", action="append", default=[], help="extra amp-run argument (repeatable)")
    ap.add_argument("--ampc-arg", action="append", default=[], help="extra ampc argument (repeatable)")
    ap.add_argument("--workdir", default=None, help="keep bundles, data and summaries here (default: a temp dir, removed)")
    ap.add_argument("--torch-python", default="/usr/bin/python3",
                    help="python with torch: PyTorch's side, and the export of the onnx_* models (default /usr/bin/python3)")
    ap.add_argument("--reference-onnx", action="store_true", help="also run the onnx_* models on --device=reference")


def steps_function(args):
    """steps(device, model_id): amp-run --steps. The imported models take 50-300 ms a step on the cpu
    device, so they run a third of the steps by default."""
    cpu = args.steps if args.steps else (20 if args.quick else 100)
    ref = args.reference_steps if args.reference_steps else (5 if args.quick else 20)

    def steps(device, model_id=None):
        n = ref if device == "reference" else cpu
        return n if args.steps or model_id not in ONNX_MODELS else max(5, n // 3)
    return steps


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=",".join(DEFAULT_MODELS))
    ap.add_argument("--quick", action="store_true", help="fewer steps")
    ap.add_argument("--threads", type=int, default=os.cpu_count(), help="OMP_NUM_THREADS for amp-run")
    add_common_args(ap)
    args = ap.parse_args()
    workdir = args.workdir or tempfile.mkdtemp(prefix="ampc_step_")
    os.makedirs(workdir, exist_ok=True)
    tools = Tools(args.bindir, workdir, args.amp_run_arg, args.threads)
    devices = args.devices.split(",")
    cpu_ok, why = (True, "") if "cpu" not in devices else cpu_device_available(tools)
    if "cpu" in devices:
        note("cpu device: %s" % why)
    runs, notes = plan_runs(devices, args.precisions.split(","), args.reference_precisions.split(","), cpu_ok,
                            args.cpu_fallback)
    print(json.dumps({"kind": "env", "framework": "ampc", "cpu_device": cpu_ok, "cpu_device_message": why,
                      "runs": runs, "workdir": workdir}), flush=True)
    for n in notes:
        note(n)
        print(json.dumps({"kind": "note", "note": n}), flush=True)
    steps_for = steps_function(args)
    failed = False
    for model_id in args.models.split(","):
        for r in run_model(tools, model_id, runs, steps_for, args.mlp_data, args.ampc_arg, args.torch_python,
                           args.reference_onnx):
            print(json.dumps(r), flush=True)
            if r["kind"] == "skip":
                note("%s %s %s: skipped: %s" % (model_id, r["device"], r["precision"], r["reason"]))
            elif r["kind"] == "error":
                failed = True
                note("%s %s %s: %s" % (model_id, r.get("device", ""), r.get("precision", ""), r["error"]))
            else:
                note("%-28s %-9s %-4s median %9.3f ms  peak %6.1f MiB  (%d steps)"
                     % (model_id, r["device"], r["precision"], r["median_ms"], r["peak_memory_bytes"] / 2**20,
                        r["steps"]))
    if not args.workdir:
        shutil.rmtree(workdir, ignore_errors=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
