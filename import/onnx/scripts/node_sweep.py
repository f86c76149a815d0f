#!/usr/bin/python3
"""Imports every model of ONNX's backend tests (libonnx-testdata) with ampc, and checks that the
ones it imports compute ONNX's expected output: the model is compiled with --loss=mse:OUTPUT and
evaluated on test_data_set_0 with the expected first output as the target, so the loss is 0 when
the output is right. Not the conformance suite (which needs models without a loss); a measurement.

Usage: node_sweep.py BUILD_BIN_DIR [DATA_DIR]   (Debian's python3: onnx and numpy)
Prints counts: refused by the importer, crashed, imported, right, wrong; fails on a crash or a
wrong output, exits 77 without onnx.
"""
import glob
import os
import re
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import onnx
    from onnx import numpy_helper
except ImportError:
    print("skipped: this Python has no onnx/numpy (Debian: python3-onnx)")
    sys.exit(77)

BIN = sys.argv[1]
DATA = sys.argv[2] if len(sys.argv) > 2 else "/usr/share/libonnx-testdata/data"


def tensor(path):
    """The TensorProto in `path` as an array; None for sequences, optionals and other kinds."""
    t = onnx.TensorProto()
    try:
        with open(path, "rb") as f:
            t.ParseFromString(f.read())
        return numpy_helper.to_array(t)
    except Exception:
        return None


def main():
    tmp = tempfile.mkdtemp(prefix="amp-node-sweep-")
    counts = {"refused": 0, "crashed": 0, "imported": 0, "right": 0, "wrong": 0, "not compared": 0}
    models = []
    for suite in ("node", "pytorch-converted", "pytorch-operator"):
        models += sorted(glob.glob(os.path.join(DATA, suite, "*", "model.onnx")))
    for model_path in models:
        d = os.path.dirname(model_path)
        model = onnx.load(model_path, load_external_data=False)
        output = model.graph.output[0].name
        initializers = {i.name for i in model.graph.initializer}
        inputs = [i for i in model.graph.input if i.name not in initializers]
        data_set = os.path.join(d, "test_data_set_0")
        arrays = {}
        if os.path.isdir(data_set):
            for k, i in enumerate(inputs):
                value = tensor("%s/input_%d.pb" % (data_set, k)) if os.path.exists("%s/input_%d.pb" % (data_set, k)) else None
                if value is not None:
                    arrays[i.name] = value
        shapes = ["--input-shape=%s=%s" % (n, "x".join(map(str, a.shape))) for n, a in arrays.items() if a.ndim]
        bundle = os.path.join(tmp, "m.ampx")
        r = subprocess.run([BIN + "/ampc", model_path, "--loss=mse:" + output, "--batch=2", "--target=cpu:generic",
                            "-o", bundle] + shapes, capture_output=True, text=True)
        if r.returncode >= 2 or r.returncode < 0:
            counts["crashed"] += 1
            print("CRASH", d, r.returncode, r.stderr[-300:])
            continue
        if r.returncode == 1:
            counts["refused"] += 1
            continue
        counts["imported"] += 1
        expected = os.path.join(data_set, "output_0.pb")
        if len(arrays) != len(inputs) or not os.path.exists(expected):
            counts["not compared"] += 1
            continue
        want = tensor(expected)
        if want is None or want.dtype != np.float32 or np.isnan(want).any():
            counts["not compared"] += 1
            continue
        arrays["target"] = want
        npz = os.path.join(tmp, "batch.npz")
        np.savez(npz, **{re.sub(r"[^A-Za-z0-9_./-]", "_", n): a for n, a in arrays.items()})
        r = subprocess.run([BIN + "/amp-run", bundle, "--device=reference", "--data=" + npz],
                           capture_output=True, text=True)
        m = re.search(r"loss = (\S+)", r.stdout)
        scale = float(np.mean(want.astype(np.float64) ** 2))
        if m and float(m.group(1)) <= 1e-9 * max(scale, 1.0):
            counts["right"] += 1
        else:
            counts["wrong"] += 1
            print("WRONG", d, m.group(1) if m else r.stderr[-300:])
    print(", ".join("%s %d" % kv for kv in counts.items()))
    return 1 if counts["crashed"] or counts["wrong"] else 0


if __name__ == "__main__":
    sys.exit(main())
