#!/usr/bin/python3
"""ONNX's Resize and Upsample node tests with their scales / sizes frozen at import.

ampc needs static shapes, so Resize's scales or sizes must be known when a model is imported;
ONNX's node tests feed them as graph inputs, and node_conformance.py counts those tests as
unsupported. This check rewrites each test's model so that every Resize / Upsample input but the
data is a Constant node holding data set 0's values, then runs it exactly as node_conformance.py
runs a test (import with an MSE loss, amp-run on the reference and the cpu device, ONNX's expected
output within rtol 1e-3, atol 1e-7). Prints one line per test; fails when a test fails, crashes, or
is refused for another reason than the documented ones (cubic mode, tf_* coordinate modes).

Usage: resize_conformance.py BUILD_BIN_DIR [DATA_DIR]. Exits 77 without onnx.
"""
import glob
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import node_conformance as nc  # noqa: E402  (exits 77 itself without onnx)
from onnx import numpy_helper  # noqa: E402

DOCUMENTED = ("mode 'cubic' is not supported", "coordinate_transformation_mode 'tf_")


def frozen_copy(test_dir, out_dir):
    """test_dir with every non-data input of its Resize / Upsample nodes made a Constant node (as
    torch's exporter writes them; a float initializer would import as a trainable parameter)."""
    model = nc.onnx.load(os.path.join(test_dir, "model.onnx"))
    initializers = {i.name for i in model.graph.initializer}
    inputs = [i.name for i in model.graph.input if i.name not in initializers]
    data_set = os.path.join(test_dir, "test_data_set_0")
    values = {n: nc.tensor(os.path.join(data_set, "input_%d.pb" % k)) for k, n in enumerate(inputs)}
    frozen = {name for node in model.graph.node if node.op_type in ("Resize", "Upsample")
              for name in node.input[1:] if name in values}
    constants = [nc.onnx.helper.make_node("Constant", [], [name], value=numpy_helper.from_array(values[name], name))
                 for name in sorted(frozen)]
    nodes = constants + list(model.graph.node)
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    kept = [i for i in model.graph.input if i.name not in frozen]
    del model.graph.input[:]
    model.graph.input.extend(kept)
    os.makedirs(os.path.join(out_dir, "test_data_set_0"))
    nc.onnx.save(model, os.path.join(out_dir, "model.onnx"))
    k_out = 0
    for k, name in enumerate(inputs):
        if name not in frozen:
            shutil.copy(os.path.join(data_set, "input_%d.pb" % k),
                        os.path.join(out_dir, "test_data_set_0", "input_%d.pb" % k_out))
            k_out += 1
    for path in glob.glob(os.path.join(data_set, "output_*.pb")):
        shutil.copy(path, os.path.join(out_dir, "test_data_set_0"))
    return len(frozen)


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    bin_dir = args[0]
    data = args[1] if len(args) > 1 else "/usr/share/libonnx-testdata/data"
    tests = sorted(glob.glob(os.path.join(data, "node", "test_resize_*")) +
                   glob.glob(os.path.join(data, "node", "test_upsample_*")))
    counts, problems = {"pass": 0, "documented": 0}, []
    for test in tests:
        name = os.path.basename(test)
        with tempfile.TemporaryDirectory(prefix="amp-resize-") as work:
            copy = os.path.join(work, "test")
            frozen_copy(test, copy)
            status, reason = nc.run_test(bin_dir, os.path.join(copy, "model.onnx"), work)
        if status == "unsupported" and any(d in reason for d in DOCUMENTED):
            status = "documented"
        print("%s %s%s" % (status, name, "" if status == "pass" else ": " + reason))
        if status in counts:
            counts[status] += 1
        else:
            problems.append(name)
    print("resize conformance: %d tests, %d pass, %d refused as documented (cubic, tf_* modes), %d other" % (
        len(tests), counts["pass"], counts["documented"], len(problems)))
    return 1 if problems or not tests else 0


if __name__ == "__main__":
    sys.exit(main())
