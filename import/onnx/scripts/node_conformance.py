#!/usr/bin/python3
"""ONNX's backend node tests (libonnx-testdata: node, pytorch-converted, pytorch-operator) as a
conformance suite for ampc's importer and devices.

Each test's model.onnx is imported with ampc (its first float output carries an MSE loss, which the
model convention requires; every output stays a result) in f32, and every test_data_set_* runs on
the reference and the cpu device with `amp-run --output`. Each output is compared with ONNX's
expected one with ONNX's tolerances (numpy.testing.assert_allclose, rtol 1e-3, atol 1e-7; integer
and bool outputs exactly). Every test ends as pass, fail or unsupported, with the reason.

Usage: node_conformance.py BUILD_BIN_DIR [DATA_DIR] [--list-passing] [--reasons]
The expectation file (node_tests_passing.txt, next to this script) lists the tests that must pass
on both devices. The suite fails on any listed test that does not pass, and on any crash of ampc or
amp-run; a passing test that is not listed is reported, so the list only grows. --list-passing
prints the list this run would write. Prints the pass count per op family and the unsupported
tests grouped by reason (--reasons: each one's own). Exits 77 without onnx.
"""
import collections
import concurrent.futures
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

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "test", "e2e"))
from safetensors_numpy import read_arrays  # noqa: E402
EXPECTED = os.path.join(HERE, "node_tests_passing.txt")
DEVICES = ("reference", "cpu")
RTOL, ATOL = 1e-3, 1e-7
SUITES = ("node", "pytorch-converted", "pytorch-operator")


def amp_name(name):
    """ONNX value name -> amp.name (import/onnx/GraphTranslator.h, sanitizeName)."""
    return re.sub(r"[^A-Za-z0-9_./-]", "_", name)


def tensor(path):
    """The TensorProto in `path` as an array; None for sequences, optionals and other kinds."""
    t = onnx.TensorProto()
    try:
        with open(path, "rb") as f:
            t.ParseFromString(f.read())
        return numpy_helper.to_array(t)
    except Exception:
        return None


def family(suite, model):
    """The op family a test counts under: the op of a one-node model, else its suite's bucket."""
    ops = {n.op_type for n in model.graph.node}
    if suite == "node" and len(ops) == 1:
        return ops.pop()
    return "%s (multi-node)" % suite if suite == "node" else suite


def first_line(text):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    line = lines[0] if lines else "(no message)"
    # Keep what is wrong, not the path and node prefix.
    line = re.sub(r"^.*?error: ", "", line)
    return line[:200]


# Why a test is unsupported, by the first matching fragment of its reason (the rest: the op's form).
REASON_KINDS = (
    ("this op is not supported yet", "an op ampc does not import yet"),
    ("are not supported (only the default ONNX domain)", "an op of another domain"),
    ("no float32 output to carry", "only integer or bool outputs (no float output to carry the loss)"),
    ("not tensors", "sequence or optional inputs/outputs"),
    ("ampc takes float", "an input type the dialect has no type for (f64, 8/16-bit ints, string, ...)"),
    ("is not supported on float tensors only", "integer data in an op that computes"),
    ("supported on float tensors only", "integer data in an op that computes"),
    ("must be known at import time", "a shape, size, scale or pad fed as a run-time input"),
    ("must be a constant", "a shape, size, scale or pad fed as a run-time input"),
    ("Cast of a computed tensor", "a Cast of computed data to another type"),
    ("ONNX shape inference", "ONNX shape inference fails or gives no static shape"),
)


def reason_kind(reason):
    for fragment, kind in REASON_KINDS:
        if fragment in reason:
            return kind
    return "the op's form (an attribute, mode or rank ampc refuses, each named in its error)"


def run_test(bin_dir, model_path, work):
    """(status, reason) for one test: pass, fail, unsupported or crash."""
    d = os.path.dirname(model_path)
    model = onnx.load(model_path, load_external_data=False)
    initializers = {i.name for i in model.graph.initializer}
    inputs = [i.name for i in model.graph.input if i.name not in initializers]
    outputs = [o.name for o in model.graph.output]
    data_sets = sorted(glob.glob(os.path.join(d, "test_data_set_*")))
    if not data_sets:
        return "unsupported", "the test has no data sets"
    cases = []
    for ds in data_sets:
        ins = [tensor("%s/input_%d.pb" % (ds, k)) for k in range(len(inputs))]
        outs = [tensor("%s/output_%d.pb" % (ds, k)) for k in range(len(outputs))]
        if any(v is None for v in ins) or any(v is None for v in outs):
            return "unsupported", "inputs or outputs that are not tensors (sequences, optionals)"
        cases.append((ins, outs))
    loss_out = next((k for k, v in enumerate(cases[0][1]) if v.dtype == np.float32), None)
    if loss_out is None:
        return "unsupported", "no float32 output to carry the MSE loss a model must have (outputs: %s)" % ", ".join(
            str(v.dtype) for v in cases[0][1])
    shapes = ["--input-shape=%s=%s" % (n, "x".join(map(str, a.shape))) for n, a in zip(inputs, cases[0][0]) if a.ndim]
    bundle = os.path.join(work, "m.ampx")
    r = subprocess.run([bin_dir + "/ampc", model_path, "--loss=mse:" + outputs[loss_out], "--batch=2",
                        "--precision=f32", "--target=cpu", "-o", bundle] + shapes, capture_output=True, text=True)
    if r.returncode < 0 or r.returncode >= 2:
        return "crash", "ampc exited %d: %s" % (r.returncode, first_line(r.stderr))
    if r.returncode == 1:
        return "unsupported", first_line(r.stderr)
    for k, (ins, outs) in enumerate(cases):
        arrays = {amp_name(n): a for n, a in zip(inputs, ins)}
        arrays["target"] = outs[loss_out]
        npz = os.path.join(work, "batch%d.npz" % k)
        np.savez(npz, **arrays)
        for device in DEVICES:
            result = os.path.join(work, "out.safetensors")
            r = subprocess.run([bin_dir + "/amp-run", bundle, "--device=" + device, "--data=" + npz, "--output=" + result],
                               capture_output=True, text=True)
            if r.returncode < 0 or r.returncode >= 2:
                return "crash", "amp-run --device=%s exited %d: %s" % (device, r.returncode, first_line(r.stderr))
            if r.returncode != 0:
                return "fail", "amp-run --device=%s: %s" % (device, first_line(r.stderr))
            got = read_arrays(result)
            for name, want in zip(outputs, outs):
                value = got.get(amp_name(name))
                if value is None:
                    return "fail", "output '%s' is not among the results" % name
                if value.shape != want.shape:
                    return "fail", "%s: output '%s' has shape %s, expected %s" % (device, name, value.shape, want.shape)
                try:
                    if want.dtype.kind == "f":
                        np.testing.assert_allclose(value.astype(np.float64), want.astype(np.float64), rtol=RTOL, atol=ATOL)
                    else:
                        np.testing.assert_array_equal(value, want)
                except AssertionError as e:
                    mismatch = re.search(r"Mismatched elements: [^\n]*", str(e))
                    return "fail", "%s, data set %d: output '%s' differs (%s)" % (
                        device, k, name, mismatch.group(0) if mismatch else "values differ")
    return "pass", ""


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    list_passing = "--list-passing" in sys.argv
    bin_dir = args[0]
    data = args[1] if len(args) > 1 else "/usr/share/libonnx-testdata/data"
    tests = []
    for suite in SUITES:
        for path in sorted(glob.glob(os.path.join(data, suite, "*", "model.onnx"))):
            tests.append(("%s/%s" % (suite, os.path.basename(os.path.dirname(path))), suite, path))
    expected = set()
    if os.path.exists(EXPECTED):
        with open(EXPECTED) as f:
            expected = {l.strip() for l in f if l.strip() and not l.startswith("#")}

    def one(test):
        name, suite, path = test
        with tempfile.TemporaryDirectory(prefix="amp-node-") as work:
            status, reason = run_test(bin_dir, path, work)
        return name, family(suite, onnx.load(path, load_external_data=False)), status, reason

    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        results = list(pool.map(one, tests))

    if list_passing:
        print("\n".join(name for name, _, status, _ in results if status == "pass"))
        return 0
    per_family = collections.defaultdict(collections.Counter)
    totals = collections.Counter()
    problems, new = [], []
    for name, fam, status, reason in results:
        per_family[fam][status] += 1
        totals[status] += 1
        if status == "crash" or (name in expected and status != "pass"):
            problems.append("%s %s: %s" % (status.upper(), name, reason))
        elif status == "pass" and name not in expected:
            new.append(name)
        if status == "fail" and name not in expected:
            print("fail (not listed) %s: %s" % (name, reason))
    print("\n%-34s %5s %5s %12s" % ("op family", "pass", "fail", "unsupported"))
    for fam in sorted(per_family):
        c = per_family[fam]
        if c["pass"] or c["fail"] or c["crash"]:
            print("%-34s %5d %5d %12d" % (fam, c["pass"], c["fail"] + c["crash"], c["unsupported"]))
    unsupported_only = sum(1 for c in per_family.values() if not (c["pass"] or c["fail"] or c["crash"]))
    print("(%d op families with every test unsupported are not shown)" % unsupported_only)
    kinds = collections.Counter(reason_kind(reason) for _, _, status, reason in results if status == "unsupported")
    print("\n%5s  %s" % ("tests", "unsupported, by reason"))
    for kind, n in kinds.most_common():
        print("%5d  %s" % (n, kind))
    if "--reasons" in sys.argv:
        for name, _, status, reason in results:
            if status == "unsupported":
                print("unsupported %s: %s" % (name, reason))
    print("\ntotal: %d tests on %s: %d pass, %d fail, %d unsupported, %d crash; %d listed in %s" % (
        len(results), " and ".join(DEVICES), totals["pass"], totals["fail"], totals["unsupported"], totals["crash"],
        len(expected), os.path.basename(EXPECTED)))
    for name in new:
        print("passes but is not listed (add it to %s): %s" % (os.path.basename(EXPECTED), name))
    for p in problems:
        print(p)
    missing = expected - {name for name, _, _, _ in results}
    for name in sorted(missing):
        print("LISTED BUT ABSENT %s: libonnx-testdata has no such test" % name)
    return 1 if problems or missing else 0


if __name__ == "__main__":
    sys.exit(main())
