#!/usr/bin/env python3
"""End-to-end tests through the command-line tools: ampc compiles, amp-run trains.

Usage: e2e.py BIN_DIR SRC_DIR SCENARIO [DEVICE]   (ctest runs every scenario on cpu and reference)
Standard library only. Each scenario asserts real numbers and exits non-zero on failure.
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zipfile

from safetensors_file import f32_values, read as read_safetensors

BIN, SRC, SCENARIO = sys.argv[1], sys.argv[2], sys.argv[3]
DEVICE = sys.argv[4] if len(sys.argv) > 4 else "cpu"
WORK = tempfile.mkdtemp(prefix="amp-e2e-%s-" % SCENARIO)


def run(*args):
    print("+", " ".join(args), flush=True)
    proc = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(proc.stdout[-3000:], flush=True)
    if proc.returncode != 0:
        sys.exit("command failed with exit status %d" % proc.returncode)
    return proc.stdout


def ampc(model, out, *flags):
    run(os.path.join(BIN, "ampc"), model, "--target=cpu:generic", "-o", out, *flags)


def train(bundle, summary, *flags):
    run(os.path.join(BIN, "amp-run"), bundle, "--device=" + DEVICE, "--summary=" + summary, *flags)
    with open(summary) as f:
        result = json.load(f)
    check(result["device"] == DEVICE, "trained on the %s device" % DEVICE)
    return result


def edit_plan(src, dst, edit):
    """Copies bundle `src` to `dst` with edit(plan) applied to its plan JSON (a hostile bundle)."""
    with open(src, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    plan = json.loads(header["__metadata__"]["ampc.plan"])
    edit(plan)
    header["__metadata__"]["ampc.plan"] = json.dumps(plan, separators=(",", ":"))
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    with open(dst, "wb") as f:
        f.write(struct.pack("<Q", len(raw)) + raw + data[8 + n:])


def npy(fmt, shape, values):
    descr = {"f": "<f4", "q": "<i8"}[fmt]
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        descr, "".join("%d, " % d for d in shape))
    header += " " * (64 - (10 + len(header) + 1) % 64) + "\n"
    return (b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1") +
            struct.pack("<%d%s" % (len(values), fmt), *values))


def write_npz(path, arrays):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        for name, blob in arrays.items():
            z.writestr(name + ".npy", blob)


def batch_variant(src, batch):
    """examples/mlp.mlir with another static batch size."""
    with open(os.path.join(SRC, "examples", "mlp.mlir")) as f:
        text = f.read().replace("tensor<128x", "tensor<%dx" % batch).replace(
            "tensor<128xi64>", "tensor<%dxi64>" % batch)
    path = os.path.join(WORK, "mlp_b%d.mlir" % batch)
    with open(path, "w") as f:
        f.write(text)
    return path


def check(cond, message):
    print(("ok: " if cond else "FAIL: ") + message, flush=True)
    if not cond:
        sys.exit(1)


MLP = os.path.join(SRC, "examples", "mlp.mlir")


# scripts/sanitize.sh sets AMP_SANITIZED=1. The reference device's scalar loops run tens of times
# slower under ASan, so there the long schedules are cut (the unsanitized run checks accuracy).
SANITIZED_REFERENCE = os.environ.get("AMP_SANITIZED") == "1" and DEVICE == "reference"


def mlp_precisions():
    """Two epochs of Fashion-MNIST in f32, bf16 and f16 (dynamic loss scaling)."""
    results = {}
    # Under the sanitizers on the reference device: 150 steps (a third of an epoch), a lower bar.
    schedule, bar = (("--steps=150", "--log-every=50"), 0.78) if SANITIZED_REFERENCE else \
        (("--epochs=2", "--log-every=234"), 0.84)
    if SANITIZED_REFERENCE:
        print("sanitized build on the reference device: %s instead of 2 epochs, accuracy bar %.2f" % (
            schedule[0], bar), flush=True)
    for precision in ("f32", "bf16", "f16"):
        bundle = os.path.join(WORK, "mlp_%s.ampx" % precision)
        ampc(MLP, bundle, "--train", "--precision=" + precision, "--lr=2e-3")
        results[precision] = train(bundle, os.path.join(WORK, precision + ".json"),
                                   "--data=fashion-mnist", *schedule)
    for precision, r in results.items():
        check(r["precision"] == precision, "%s bundle reports precision %s" % (precision, r["precision"]))
        check(r["eval_accuracy"] >= bar, "%s test accuracy %.4f >= %.2f" % (precision, r["eval_accuracy"], bar))
    check(results["f16"]["loss_scaling"] == "dynamic", "f16 trains with dynamic loss scaling")
    check(results["bf16"]["loss_scaling"] == "none", "bf16 trains without loss scaling")
    base = results["f32"]["final_loss"]
    for precision in ("bf16", "f16"):
        rel = abs(results[precision]["final_loss"] - base) / base
        check(rel <= 0.03, "%s final loss %.4f within 3%% of f32 %.4f (%.2f%%)" % (
            precision, results[precision]["final_loss"], base, 100 * rel))
    check(os.path.exists(os.path.join(WORK, "f16.svg")), "a loss/scale curve is written next to the summary")
    for precision, r in results.items():
        check_planned_memory(r, precision, ("--train", "--precision=" + precision, "--lr=2e-3"))


# The ampc --emit=memory-report rows the summary's `memory` object carries: (row, where in it).
MEMORY_REPORT_ROWS = (
    ("params (f32 masters)", ("persistent", "params")),
    ("optimizer moments", ("persistent", "optimizer_moments")),
    ("inputs and labels", ("inputs_and_labels",)),
    ("activations saved for the backward", ("arena_peak", "activations_saved_for_backward")),
    ("gradients and backward values", ("arena_peak", "gradients_and_backward_values")),
    ("live at the peak", ("arena_peak", "live_bytes")),
    ("arena (live + placement gaps)", ("arena_peak", "arena_bytes")),
)


def check_planned_memory(r, precision, flags):
    """The summary's planned split: params and state by class add up to the persistent bytes the
    session allocated, the peak's phases to its live bytes, and each figure is the memory report's."""
    m = r["memory"]
    check(sum(m["persistent"].values()) == r["persistent_bytes"],
          "%s: the plan's params and state by class %s add up to persistent_bytes %d" % (
              precision, m["persistent"], r["persistent_bytes"]))
    peak = m["arena_peak"]
    phases = sum(peak[k] for k in ("activations_saved_for_backward", "other_forward_values",
                                   "gradients_and_backward_values", "optimizer_and_scaler_values"))
    check(phases == peak["live_bytes"] <= peak["arena_bytes"],
          "%s: the arena's peak split by phase adds up to its live bytes %d (arena %d)" % (
              precision, peak["live_bytes"], peak["arena_bytes"]))
    report = run(os.path.join(BIN, "ampc"), MLP, "--target=cpu:generic", *flags, "--emit=memory-report")
    for row, path in MEMORY_REPORT_ROWS:
        value = m
        for key in path:
            value = value[key]
        line = next((l for l in report.splitlines() if l.strip().startswith(row)), "")
        # The report's second column is the compiled precision's.
        shown = line.split(row, 1)[1].split("MiB")[1].strip() if line else ""
        check(shown == "%.2f" % (value / 2.0 ** 20),
              "%s: the summary's %s (%d B) is the memory report's %s MiB" % (precision, row, value, shown))
    check(("step %d/%d" % (peak["step"], peak["steps"])) in report,
          "%s: the report's peak is at the summary's step %d/%d" % (precision, peak["step"], peak["steps"]))


def lm_learns():
    """The transformer LM's loss falls by at least half on next-token data."""
    data = os.path.join(WORK, "lm.npz")
    run(sys.executable, os.path.join(SRC, "examples", "make_lm_data.py"), data, "--sequences=512")
    bundle = os.path.join(WORK, "lm.ampx")
    ampc(os.path.join(SRC, "examples", "transformer_lm.mlir"), bundle, "--train", "--precision=bf16",
         "--lr=3e-3")
    r = train(bundle, os.path.join(WORK, "lm.json"), "--data=" + data, "--steps=40", "--log-every=10")
    check(r["final_loss"] <= 0.5 * r["first_loss"],
          "LM loss fell from %.4f to %.4f (at least half)" % (r["first_loss"], r["final_loss"]))


def resume_bitwise():
    """Train 5 steps = train 3, save, resume 2 (all state, f16 with dynamic scaling)."""
    bundle = os.path.join(WORK, "mlp_f16.ampx")
    ampc(MLP, bundle, "--train", "--precision=f16", "--optimizer=adamw")
    straight, split = os.path.join(WORK, "straight"), os.path.join(WORK, "split")
    common = ["--data=fashion-mnist", "--seed=5", "--eval-every=1000000"]
    train(bundle, os.path.join(WORK, "a.json"), *common, "--steps=5", "--checkpoint=" + straight)
    train(bundle, os.path.join(WORK, "b.json"), *common, "--steps=3", "--checkpoint=" + split)
    train(bundle, os.path.join(WORK, "c.json"), *common, "--steps=2", "--checkpoint=" + split, "--resume")
    a, meta_a = read_safetensors(os.path.join(straight, "checkpoint.safetensors"))
    b, meta_b = read_safetensors(os.path.join(split, "checkpoint.safetensors"))
    check(meta_a["step"] == meta_b["step"] == "5", "both checkpoints are at step 5")
    check(sorted(a) == sorted(b), "same %d state tensors" % len(a))
    differing = [k for k in a if a[k] != b[k]]
    check(not differing, "every tensor bitwise equal (params, moments, scale, tracker, counters)%s" %
          ("" if not differing else ": differ " + ", ".join(differing)))
    check(any(k.endswith(".exp_avg") for k in a) and "amp.loss_scale" in a and "amp.step" in a,
          "the checkpoint holds moments, the loss scale and the step counter")


def accumulation():
    """4 micro-batches of 32 with --accumulate=4 equal one batch of 128 (f32, SGD)."""
    one = os.path.join(WORK, "b128.ampx")
    four = os.path.join(WORK, "b32x4.ampx")
    flags = ["--train", "--precision=f32", "--optimizer=sgd", "--momentum=0", "--lr=0.1"]
    ampc(batch_variant(MLP, 128), one, *flags)
    ampc(batch_variant(MLP, 32), four, *(flags + ["--accumulate=4"]))
    common = ["--data=fashion-mnist", "--seed=9", "--steps=3", "--eval-every=1000000"]
    train(one, os.path.join(WORK, "one.json"), *common, "--checkpoint=" + os.path.join(WORK, "one"))
    r = train(four, os.path.join(WORK, "four.json"), *common, "--checkpoint=" + os.path.join(WORK, "four"))
    check(r["accumulate"] == 4 and r["batch"] == 32, "the second bundle accumulates 4 micro-batches of 32")
    a, _ = read_safetensors(os.path.join(WORK, "one", "checkpoint.safetensors"))
    b, _ = read_safetensors(os.path.join(WORK, "four", "checkpoint.safetensors"))
    worst = 0.0
    for name in a:
        if name.startswith("fc") and a[name][0] == "F32":
            for x, y in zip(f32_values(a[name][2]), f32_values(b[name][2])):
                worst = max(worst, abs(x - y))
    # The sums differ only in f32 summation order: ~1e-7 relative per step on O(0.1) weights.
    check(worst <= 2e-6, "params after 3 steps agree to %.3g (<= 2e-6)" % worst)


def clipping():
    """--clip-grad-norm clips the unscaled gradients to the global norm: one SGD step (lr 0.1, no
    momentum, f16 with dynamic loss scaling) moves the params by lr * max_norm exactly (the gradient
    norm far exceeds max_norm), through the device's grad-stats pass."""
    bundle = os.path.join(WORK, "clip.ampx")
    ampc(MLP, bundle, "--train", "--precision=f16", "--optimizer=sgd", "--momentum=0", "--lr=0.1",
         "--clip-grad-norm=0.05")
    common = ["--data=fashion-mnist", "--seed=3", "--eval-every=1000000"]
    first, second = os.path.join(WORK, "first"), os.path.join(WORK, "second")
    train(bundle, os.path.join(WORK, "a.json"), *common, "--steps=1", "--checkpoint=" + first)
    shutil.copytree(first, second)
    r = train(bundle, os.path.join(WORK, "b.json"), *common, "--steps=1", "--checkpoint=" + second, "--resume")
    check(r["skipped_steps"] == 0, "no step was skipped")
    a, _ = read_safetensors(os.path.join(first, "checkpoint.safetensors"))
    b, _ = read_safetensors(os.path.join(second, "checkpoint.safetensors"))
    moved = 0.0
    for name in a:
        if name.startswith("fc") and name.count(".") == 1 and a[name][0] == "F32":
            moved += sum((x - y) ** 2 for x, y in zip(f32_values(a[name][2]), f32_values(b[name][2])))
    moved = moved ** 0.5
    check(0.99 * 0.005 <= moved <= 1.0001 * 0.005, "one clipped step moved the params by %.6g (lr * max_norm = 0.005)" % moved)


def injected_overflow():
    """A step whose f16 forward overflows is skipped: only the counters and the scale change."""
    bundle = os.path.join(WORK, "mlp_f16.ampx")
    ampc(MLP, bundle, "--train", "--precision=f16", "--optimizer=adamw")
    good, bad = os.path.join(WORK, "good.npz"), os.path.join(WORK, "bad.npz")
    pixels = [((i * 7919) % 255) / 255.0 for i in range(128 * 784)]
    labels = [i % 10 for i in range(128)]
    write_npz(good, {"image": npy("f", (128, 784), pixels), "label": npy("q", (128,), labels)})
    # 60000 fits in f16, but 784 such products overflow the f16 result of the first linear layer.
    write_npz(bad, {"image": npy("f", (128, 784), [60000.0] * (128 * 784)), "label": npy("q", (128,), labels)})
    ckpt = os.path.join(WORK, "ckpt")
    train(bundle, os.path.join(WORK, "g.json"), "--data=" + good, "--steps=1", "--checkpoint=" + ckpt)
    before, _ = read_safetensors(os.path.join(ckpt, "checkpoint.safetensors"))
    r = train(bundle, os.path.join(WORK, "b.json"), "--data=" + bad, "--steps=1", "--checkpoint=" + ckpt,
              "--resume")
    after, _ = read_safetensors(os.path.join(ckpt, "checkpoint.safetensors"))
    check(r["skipped_steps"] == 1, "the overflowing step is counted as skipped")
    changed = sorted(k for k in before if before[k] != after[k])
    check(changed == ["amp.growth_tracker", "amp.loss_scale", "amp.skipped_steps"] or
          changed == ["amp.loss_scale", "amp.skipped_steps"],
          "only the scale, tracker and skipped counter changed (changed: %s)" % ", ".join(changed))
    s0, s1 = f32_values(before["amp.loss_scale"][2])[0], f32_values(after["amp.loss_scale"][2])[0]
    check(s1 == s0 * 0.5, "the loss scale backed off from %g to %g" % (s0, s1))


def run_fails(*args):
    print("+", " ".join(args), flush=True)
    proc = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(proc.stdout[-2000:], flush=True)
    check(proc.returncode != 0, "exits non-zero")
    return proc.stdout


def bad_inputs():
    """NaN-laden data, out-of-range labels and a corrupt checkpoint are clear errors, not crashes."""
    bundle = os.path.join(WORK, "mlp.ampx")
    ampc(MLP, bundle, "--train", "--precision=f32")
    amp_run = os.path.join(BIN, "amp-run")

    def run_fails_on_device(*args):
        return run_fails(args[0], args[1], "--device=" + DEVICE, *args[2:])

    labels = [i % 10 for i in range(128)]
    pixels = [0.5] * (128 * 784)
    pixels[1000] = float("nan")
    nan = os.path.join(WORK, "nan.npz")
    write_npz(nan, {"image": npy("f", (128, 784), pixels), "label": npy("q", (128,), labels)})
    out = run_fails_on_device(amp_run, bundle, "--data=" + nan, "--steps=1")
    check("nan.npz: 'image' holds a non-finite value at flat index 1000" in out, "the NaN is located")

    # A zip bomb: 314 MB of zeros deflated ~1028:1 into 305 kB is refused before decompressing.
    bomb = os.path.join(WORK, "bomb.npz")
    rows = 100000
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        with z.open("image.npy", "w") as f:
            f.write(npy("f", (rows, 784), []))
            zeros = bytes(1 << 22)
            for _ in range(rows * 784 * 4 // len(zeros)):
                f.write(zeros)
            f.write(bytes(rows * 784 * 4 % len(zeros)))
        z.writestr("label.npy", npy("q", (128,), labels))
    out = run_fails_on_device(amp_run, bundle, "--data=" + bomb, "--steps=1")
    check("bomb.npz: member 'image.npy': refused as a zip bomb" in out and "more than 1000:1" in out,
          "a zip bomb in the --data npz is refused, located")

    # -inf as well as NaN; training refuses it always, one entry with --check-numerics.
    pixels[1000] = 0.5
    pixels[77] = float("-inf")
    inf = os.path.join(WORK, "inf.npz")
    write_npz(inf, {"image": npy("f", (128, 784), pixels), "label": npy("q", (128,), labels)})
    out = run_fails_on_device(amp_run, bundle, "--data=" + inf, "--steps=1")
    check("inf.npz: 'image' holds a non-finite value at flat index 77" in out, "a -inf in training data is located")
    out = run_fails_on_device(amp_run, bundle, "--data=" + inf, "--check-numerics")
    check("input 'image' holds a non-finite value at element 77" in out, "and in an entry's input (--check-numerics)")

    # Truncated data and parameter files, and a parameter file of the wrong shape.
    with open(inf, "rb") as f:
        blob = f.read()
    truncated = os.path.join(WORK, "truncated.npz")
    with open(truncated, "wb") as f:
        f.write(blob[:1000])
    out = run_fails_on_device(amp_run, bundle, "--data=" + truncated, "--steps=1")
    check("truncated.npz: truncated: end of central directory record not found" in out, "a truncated --data npz")

    wrong = os.path.join(WORK, "labels.npz")
    write_npz(wrong, {"image": npy("f", (128, 784), [0.5] * (128 * 784)),
                      "label": npy("q", (128,), [12] * 128)})
    out = run_fails_on_device(amp_run, bundle, "--data=" + wrong, "--steps=1")
    check("label 12 at position [0] is out of range [0, 10)" in out and "mlp.mlir:20:" in out,
          "an out-of-range label names itself and the loss op's source line")

    # --input names inputs and labels only: a param is pointed at --params, an unknown name listed.
    weight = os.path.join(WORK, "fc1_weight.npy")
    with open(weight, "wb") as f:
        f.write(npy("f", (784, 256), [0.0] * (784 * 256)))
    out = run_fails_on_device(amp_run, bundle, "--input", "fc1.weight=" + weight)
    check("'fc1.weight' is a param of the model, not an input; load params with --params" in out,
          "--input of a param is refused, pointing at --params")
    out = run_fails_on_device(amp_run, bundle, "--input", "imag=" + weight)
    check("the model has no input 'imag' (it has: image, label)" in out, "--input of an unknown name lists the inputs")

    good = os.path.join(WORK, "good.npz")
    write_npz(good, {"image": npy("f", (128, 784), [0.5] * (128 * 784)), "label": npy("q", (128,), labels)})
    ckpt = os.path.join(WORK, "ckpt")
    train(bundle, os.path.join(WORK, "s.json"), "--data=" + good, "--steps=1", "--checkpoint=" + ckpt)
    path = os.path.join(ckpt, "checkpoint.safetensors")
    with open(path, "rb") as f:
        blob = f.read()
    with open(path, "wb") as f:
        f.write(blob[: len(blob) // 2])
    out = run_fails_on_device(amp_run, bundle, "--data=" + good, "--steps=1", "--checkpoint=" + ckpt, "--resume")
    check("checkpoint.safetensors" in out and "amp-run:" in out, "a truncated checkpoint is named")
    params = os.path.join(WORK, "params.safetensors")
    with open(params, "wb") as f:
        f.write(blob[: len(blob) // 2])
    out = run_fails_on_device(amp_run, bundle, "--data=" + good, "--params=" + params)
    check("params.safetensors: truncated: data_offsets reach" in out, "a truncated --params file is located")
    write_safetensors(params, {"fc1.weight": ((10, 10), [0.0] * 100)})
    out = run_fails_on_device(amp_run, bundle, "--data=" + good, "--params=" + params)
    check("params.safetensors: param 'fc1.weight': expected f32 [784, 256], the file has f32 [10, 10]" in out,
          "a --params tensor of the wrong shape is located")

    # One flipped bit in the tensor data: the checkpoint's sha256 no longer matches.
    train(bundle, os.path.join(WORK, "s.json"), "--data=" + good, "--steps=1", "--checkpoint=" + ckpt)
    with open(path, "rb") as f:
        blob = bytearray(f.read())
    blob[-100] ^= 0x10
    with open(path, "wb") as f:
        f.write(bytes(blob))
    out = run_fails_on_device(amp_run, bundle, "--data=" + good, "--steps=1", "--checkpoint=" + ckpt, "--resume")
    check("do not match the checkpoint's sha256" in out and "corrupted" in out, "a flipped bit is caught on resume")

    # A checkpoint whose step is at the counter's limit is refused, not overflowed.
    train(bundle, os.path.join(WORK, "s.json"), "--data=" + good, "--steps=1", "--checkpoint=" + ckpt)
    contents, meta = read_safetensors(path)
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    header["__metadata__"]["step"] = str(2 ** 63 - 1)
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)) + raw + data[8 + n:])
    out = run_fails_on_device(amp_run, bundle, "--data=" + good, "--steps=1", "--checkpoint=" + ckpt, "--resume")
    check("not resuming from it: its tag does not verify" in out and "--trust-checkpoint" in out,
          "an edited checkpoint is refused by its authentication tag")
    out = run_fails_on_device(amp_run, bundle, "--data=" + good, "--steps=1", "--checkpoint=" + ckpt, "--resume",
                              "--trust-checkpoint")
    check("step 9223372036854775807 is out of range" in out, "a checkpoint step of INT64_MAX is refused")

    # Counts and sizes edited in the bundle are validated before anything divides or allocates.
    def set_accumulate(value):
        return lambda plan: plan["metadata"].__setitem__("accumulate", value)

    def zero_batch(plan):
        next(b for b in plan["buffers"] if b["name"] == "image")["shape"][0] = 0

    def set_shape(name, shape):
        return lambda plan: next(b for b in plan["buffers"] if b["name"] == name).__setitem__("shape", shape)

    def reshape_everywhere(old, new):
        """Every buffer shaped `old` (a param, its gradient, moments and update) becomes `new`: a
        consistent plan whose sizes alone are wrong."""
        def edit(plan):
            for b in plan["buffers"]:
                if b["shape"] == old:
                    b["shape"] = list(new)
        return edit

    def temp_rows(rows):
        def edit(plan):  # the first matrix-shaped temporary of the training step
            next(b for b in plan["buffers"]
                 if b["kind"] == "temp" and b["name"].startswith("train_step.") and len(b["shape"]) == 2)["shape"][0] = rows
        return edit

    def arena(value):
        def edit(plan):
            next(e for e in plan["entries"] if e["name"] == "train_step")["memory"]["arena_bytes"] = value
        return edit

    limit = "is larger than the runtime's limit of 68719476736 bytes"
    # One check per class: counts (zero, negative, too large, past int64), batch sizes (zero,
    # negative, huge), shapes (negative, not an integer, past uint64), element counts whose product
    # overflows int64 (2 and 3 dims), params of 2^31 elements (over the memory limit) and 2^40
    # (over the per-buffer limit), a temporary broadcast to 2^30 rows, arena sizes (negative, 2^62).
    for name, edit, message in (
            ("accumulate0", set_accumulate("0"), "'accumulate' is 0; it must be in [1, 2^20]"),
            ("accumulate_neg", set_accumulate("-3"), "'accumulate' is -3"),
            ("accumulate_big", set_accumulate("1048577"), "'accumulate' is 1048577; it must be in [1, 2^20]"),
            ("accumulate_int64", set_accumulate("9223372036854775808"), "'accumulate' is not an integer"),
            ("batch0", zero_batch, "has batch size 0"),
            ("batch_neg", set_shape("image", [-128, 784]), "batch_neg.ampx: buffer 0: negative dimension in 'shape'"),
            ("batch_huge", set_shape("image", [2 ** 40, 784]), "buffer 'image' [1099511627776, 784] " + limit),
            ("label_neg", set_shape("label", [-1]), "label_neg.ampx: buffer 1: negative dimension in 'shape'"),
            ("dim_neg", reshape_everywhere([784, 256], [784, -256]), "dim_neg.ampx: buffer 2: negative dimension"),
            ("dim_float", set_shape("fc1.weight", [1.5, 256]), "dim_float.ampx: buffer 2: 'shape' must hold integers only"),
            ("dim_uint64", set_shape("fc1.weight", [2 ** 64, 256]), "dim_uint64.ampx: buffer 2: 'shape' must hold integers only"),
            ("numel_overflow2", set_shape("image", [2 ** 32, 2 ** 32]), "buffer 'image' [4294967296, 4294967296] " + limit),
            ("numel_overflow3", set_shape("image", [2 ** 21] * 3), "buffer 'image' [2097152, 2097152, 2097152] " + limit),
            ("param_2p31", reshape_everywhere([784, 256], [2 ** 16, 2 ** 15]),
             "more than the memory limit of 17179869184 bytes (--memory-limit)"),
            ("param_2p40", reshape_everywhere([784, 256], [2 ** 20, 2 ** 20]), "buffer 'fc1.weight' [1048576, 1048576] " + limit),
            ("broadcast_2p30", temp_rows(2 ** 30), "[1073741824, "),
            ("arena_neg", arena(-64), "entry 'train_step': arena size out of range"),
            ("arena_2p62", arena(2 ** 62), "bytes of arenas, more than the memory limit of 17179869184 bytes")):
        hostile = os.path.join(WORK, name + ".ampx")
        edit_plan(bundle, hostile, edit)
        # A fixed memory limit, so that the 2^31-element param is refused the same on any machine.
        out = run_fails_on_device(amp_run, hostile, "--data=" + good, "--steps=1", "--memory-limit=16GiB")
        check(message in out and (name != "broadcast_2p30" or limit in out),
              "a bundle edited to carry %s is refused: %s" % (name, message))
    out = run_fails_on_device(amp_run, bundle, "--data=" + good, "--steps=5", "--log-every=1",
                              "--checkpoint=/etc/passwd/ckpt")
    check("/etc/passwd/ckpt: cannot create checkpoint directory: Not a directory" in out and "step 1/" not in out,
          "an unusable checkpoint directory is refused before the first step")
    out = run_fails_on_device(amp_run, bundle, "--data=" + good, "--steps=1", "--memory-limit=1MiB")
    check("more than the memory limit of 1048576 bytes" in out, "a bundle over --memory-limit is refused")

    # Hostile memory layouts: a buffer past the end of the arena, two live buffers on one byte
    # range. Every device refuses the bundle before anything runs.
    def train_entry(plan):
        return next(e for e in plan["entries"] if e["name"] == "train_step")

    def past_the_end(plan):
        memory = train_entry(plan)["memory"]
        memory["offsets"][0][1] = memory["arena_bytes"]

    def overlapping(plan):
        memory = train_entry(plan)["memory"]
        for pair in memory["offsets"]:
            pair[1] = 0

    for name, edit, message in (("past_the_end", past_the_end, "does not fit a"),
                                ("overlapping", overlapping, "are live at the same time and share arena bytes")):
        hostile = os.path.join(WORK, name + ".ampx")
        edit_plan(bundle, hostile, edit)
        out = run_fails_on_device(amp_run, hostile, "--data=" + good, "--steps=1")
        check("entry 'train_step': memory layout:" in out and message in out,
              "a hostile layout (%s) is refused with a located message" % name)


def amp_run(*args):
    return run(os.path.join(BIN, "amp-run"), args[0], "--device=" + DEVICE, *args[1:])


def f32(x):
    """x rounded to the nearest f32 (Python floats are f64)."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def write_safetensors(path, tensors):
    """tensors: name -> (shape, list of f32 values)."""
    header, blob = {}, b""
    for name, (shape, values) in tensors.items():
        raw = struct.pack("<%df" % len(values), *values)
        header[name] = {"dtype": "F32", "shape": list(shape), "data_offsets": [len(blob), len(blob) + len(raw)]}
        blob += raw
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + blob)


def synthetic_data(path, rows, seed=1):
    """Deterministic Fashion-MNIST-shaped data: pixels in [0, 1), labels 0..9."""
    pixels = [(((i + seed) * 7919) % 251) / 251.0 for i in range(rows * 784)]
    labels = [(i * 3 + seed) % 10 for i in range(rows)]
    write_npz(path, {"image": npy("f", (rows, 784), pixels), "label": npy("q", (rows,), labels)})


def write_npy_folder(folder, rows, block_rows=512, seed=1, nan_row=None):
    """A streamed dataset: folder/image.npy [rows, 784] f32 and folder/label.npy [rows] i64, written
    a block at a time (the pattern of synthetic_data, repeated), so that a large one is cheap."""
    os.makedirs(folder, exist_ok=True)
    block = [(((i + seed) * 7919) % 251) / 251.0 for i in range(block_rows * 784)]
    pixels = npy("f", (rows, 784), [])
    with open(os.path.join(folder, "image.npy"), "wb") as f:
        f.write(pixels)
        raw = struct.pack("<%df" % len(block), *block)
        for start in range(0, rows, block_rows):
            n = min(block_rows, rows - start)
            chunk = raw[:n * 784 * 4]
            if nan_row is not None and start <= nan_row < start + n:
                k = (nan_row - start) * 784 + 5
                chunk = chunk[:4 * k] + struct.pack("<f", float("nan")) + chunk[4 * k + 4:]
            f.write(chunk)
    with open(os.path.join(folder, "label.npy"), "wb") as f:
        f.write(npy("q", (rows, ), [(i * 3 + seed) % 10 for i in range(rows)]))


def max_rss_mb(*args):
    """Runs a command that must succeed; its own peak resident memory in MiB (from wait4)."""
    print("+", " ".join(args), flush=True)
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    print(out.decode()[-2000:], flush=True)
    check(proc.returncode == 0, "exit status 0")
    return usage.ru_maxrss / 1024


def streamed_data():
    """--data=DIR streams INPUT.npy/LABEL.npy: the same steps as the npz read whole, memory that
    does not grow with the dataset, a non-finite example named, --eval-data and --export."""
    bundle = os.path.join(WORK, "mlp.ampx")
    ampc(MLP, bundle, "--train", "--precision=bf16")
    small = os.path.join(WORK, "small")
    write_npy_folder(small, 1024)
    with open(os.path.join(small, "image.npy"), "rb") as f, open(os.path.join(small, "label.npy"), "rb") as g:
        write_npz(os.path.join(WORK, "small.npz"), {"image": f.read(), "label": g.read()})
    steps = "--steps=3" if DEVICE == "reference" else "--steps=12"
    a = train(bundle, os.path.join(WORK, "a.json"), "--data=" + small, steps, "--metrics=" + os.path.join(WORK, "a.jsonl"))
    b = train(bundle, os.path.join(WORK, "b.json"), "--data=" + os.path.join(WORK, "small.npz"), steps,
              "--metrics=" + os.path.join(WORK, "b.jsonl"))
    losses = lambda path: [json.loads(l)["loss"] for l in open(path) if '"kind":"step"' in l]
    check(losses(os.path.join(WORK, "a.jsonl")) == losses(os.path.join(WORK, "b.jsonl")),
          "streamed folder and npz give the same losses, bit for bit")
    check(a["final_loss"] == b["final_loss"], "and the same final loss")

    # Held-out set and weights export.
    weights = os.path.join(WORK, "w.safetensors")
    r = train(bundle, os.path.join(WORK, "c.json"), "--data=" + small, steps, "--eval-data=" + small,
              "--export=" + weights)
    check(r.get("eval_accuracy") is not None, "--eval-data evaluates (accuracy %s)" % r.get("eval_accuracy"))
    tensors, _ = read_safetensors(weights)
    check(sorted(tensors) == ["fc1.bias", "fc1.weight", "fc2.bias", "fc2.weight", "fc3.bias", "fc3.weight"],
          "--export holds the params by name and nothing of the optimizer: %s" % sorted(tensors))

    # A non-finite example is named when its batch is gathered.
    bad = os.path.join(WORK, "bad")
    write_npy_folder(bad, 256, nan_row=77)
    out = run_fails(os.path.join(BIN, "amp-run"), bundle, "--device=" + DEVICE, "--data=" + bad, "--steps=2",
                    "--shuffle=false")
    check("image.npy: example 77 holds a non-finite value" in out, "a NaN example is named")

    if DEVICE != "cpu":
        return
    # Memory does not grow with the dataset: 32x more examples (about 100 MB more data) on the cpu
    # device, the same steps, peak RSS within 8 MiB.
    big = os.path.join(WORK, "big")
    write_npy_folder(big, 1024 * 32)
    common = [os.path.join(BIN, "amp-run"), bundle, "--device=cpu", "--steps=40", "--log-every=1000000"]
    rss_small = max_rss_mb(*common, "--data=" + os.path.join(WORK, "small"))
    rss_big = max_rss_mb(*common, "--data=" + big)
    size_mb = os.path.getsize(os.path.join(big, "image.npy")) / 2**20
    check(rss_big - rss_small < 8, "peak RSS %.1f MiB with a %.0f MiB dataset, %.1f MiB with 3 MiB" %
          (rss_big, size_mb, rss_small))


def pytorch_update_scale(scale, tracker, found_inf, growth_factor, backoff_factor, growth_interval):
    """torch._amp_update_scale_ (aten/src/ATen/native/cuda/AmpKernels.cu): the f32 scale is
    multiplied by the f64 factor and stored as f32; growth is dropped when it is not finite."""
    if found_inf:
        return f32(scale * backoff_factor), 0
    successful = tracker + 1
    if successful == growth_interval:
        grown = f32(scale * growth_factor)
        return (grown if grown != float("inf") else scale), 0
    return scale, successful


def torch_update_scale():
    """PyTorch's own kernel when PyTorch is installed and has it on the CPU, else None."""
    try:
        import torch
        s, t, f = torch.tensor([1.0]), torch.tensor([0], dtype=torch.int32), torch.tensor([0.0])
        torch._amp_update_scale_(s, t, f, 2.0, 0.5, 3)
    except Exception:
        return None

    def update(scale, tracker, found_inf, growth_factor, backoff_factor, growth_interval):
        s, t = torch.tensor([scale], dtype=torch.float32), torch.tensor([tracker], dtype=torch.int32)
        torch._amp_update_scale_(s, t, torch.tensor([1.0 if found_inf else 0.0]), growth_factor, backoff_factor,
                                 growth_interval)
        return float(s[0]), int(t[0])
    return update


def scaler_replay():
    """GradScaler with injected overflows: the metrics file, replayed through PyTorch's update
    rule, gives the same scale and growth tracker on every line; the summary's overflow counts,
    final loss and the SVG's marks agree with it."""
    bundle = os.path.join(WORK, "mlp_f16.ampx")
    # 2^40 overflows the f16 backward until the scale has backed off; growth every 3 clean steps
    # by 4 overflows again, so the run alternates between the two rules.
    ampc(MLP, bundle, "--train", "--precision=f16", "--init-scale=1099511627776", "--growth-factor=4",
         "--backoff-factor=0.25", "--growth-interval=3", "--clip-grad-norm=5")
    data = os.path.join(WORK, "data.npz")
    synthetic_data(data, 256)
    metrics, summary = os.path.join(WORK, "m.jsonl"), os.path.join(WORK, "s.json")
    out = amp_run(bundle, "--data=" + data, "--steps=40", "--log-every=1", "--metrics=" + metrics,
                  "--summary=" + summary)
    with open(metrics) as f:
        records = [json.loads(line) for line in f]
    steps = [r for r in records if r["kind"] == "step"]
    check(len(steps) == 40 and [r["step"] for r in steps] == list(range(1, 41)), "one record per step, in order")
    rules = [("replayed rule", pytorch_update_scale)]
    if torch_update_scale():
        rules.append(("torch._amp_update_scale_", torch_update_scale()))
    for name, rule in rules:
        scale, tracker, bad = 1099511627776.0, 0, []
        for r in steps:
            if r["scale"] != scale:
                bad.append("step %d: scale %r, expected %r" % (r["step"], r["scale"], scale))
            scale, tracker = rule(scale, tracker, r["found_inf"], 4.0, 0.25, 3)
            if r["next_scale"] != scale or r["growth_tracker"] != tracker:
                bad.append("step %d: next %r/%r, expected %r/%r" % (r["step"], r["next_scale"], r["growth_tracker"],
                                                                   scale, tracker))
        check(not bad, "%s: scale and growth tracker match on all 40 lines %s" % (name, "; ".join(bad[:3])))
    overflows = [r["step"] for r in steps if r["found_inf"]]
    grew = sum(1 for a, b in zip(steps, steps[1:]) if b["scale"] > a["scale"])
    check(len(overflows) >= 5 and grew >= 2, "the run overflowed %d times and grew the scale %d times" %
          (len(overflows), grew))
    check(all(r["skipped"] == r["found_inf"] for r in steps), "skipped == found_inf")
    check(all(isinstance(r["loss"], float) for r in steps), "every step has its f32 loss, skipped ones too")
    check(all(r["grad_norm"] == "nan" or r["grad_norm"] == "inf" for r in steps if r["found_inf"]) and
          all(isinstance(r["grad_norm"], float) for r in steps if not r["found_inf"]),
          "grad_norm is the unscaled norm (non-finite exactly on overflow steps)")
    check(all(abs(r["lr"] - 1e-3) < 1e-9 for r in steps), "lr recorded")
    with open(summary) as f:
        s = json.load(f)
    check(s["overflow_steps"] == len(overflows) and s["skipped_steps"] == len(overflows) and
          s["first_overflow_steps"] == overflows[:10], "summary: overflow count and first overflow steps")
    clean = [r["loss"] for r in steps if not r["found_inf"]][-50:]
    check(abs(s["final_loss"] - sum(clean) / len(clean)) <= 1e-12 * abs(s["final_loss"]),
          "final_loss is the mean of the clean steps (%d of them)" % len(clean))
    check(s["growth_factor"] == 4 and s["backoff_factor"] == 0.25 and s["growth_interval"] == 3 and
          s["init_scale"] == 1099511627776, "the GradScaler configuration is in the summary")
    with open(os.path.join(WORK, "s.svg")) as f:
        svg = f.read()
    check(svg.count("class='skipped'") == len(overflows), "the SVG marks every skipped step")
    small = [r["next_scale"] for r in steps if r["next_scale"] < 1e6]
    check(any(("scale %g " % v) in out for v in small), "the progress line prints the scale with %g")


def grads_entry():
    """The grads entry: unscaled f32 gradients by name, equal to central differences of the eval
    loss, to the other device's, and exactly what one SGD step applies."""
    bundle = os.path.join(WORK, "mlp_sgd.ampx")
    ampc(MLP, bundle, "--train", "--precision=f32", "--optimizer=sgd", "--momentum=0", "--weight-decay=0", "--lr=0.5")
    data = os.path.join(WORK, "batch.npz")
    synthetic_data(data, 128)
    shapes = {"fc1.weight": (784, 256), "fc1.bias": (256,), "fc2.weight": (256, 256), "fc2.bias": (256,),
              "fc3.weight": (256, 10), "fc3.bias": (10,)}
    params = {}
    for k, (name, shape) in enumerate(shapes.items()):
        n = 1
        for d in shape:
            n *= d
        fan_in = shape[0] if len(shape) == 2 else 16
        params[name] = (shape, [f32(((((i + 1) * (2654435761 + k)) % 1000) / 1000.0 - 0.5) / fan_in ** 0.5)
                                for i in range(n)])
    p0 = os.path.join(WORK, "p0.safetensors")
    write_safetensors(p0, params)
    grads = os.path.join(WORK, "g.safetensors")
    out = amp_run(bundle, "--entry=grads", "--data=" + data, "--params=" + p0, "--output=" + grads)
    g, _ = read_safetensors(grads)
    check(sorted(g) == sorted(["loss", "found_inf"] + [n + ".grad" for n in shapes]),
          "results named loss, found_inf and <param>.grad: %s" % ", ".join(sorted(g)))
    check(all(g[n + ".grad"][0] == "F32" and g[n + ".grad"][1] == list(shapes[n]) for n in shapes), "f32, param-shaped")
    other = "reference" if DEVICE == "cpu" else "cpu"
    grads2 = os.path.join(WORK, "g2.safetensors")
    run(os.path.join(BIN, "amp-run"), bundle, "--device=" + other, "--entry=grads", "--data=" + data,
        "--params=" + p0, "--output=" + grads2)
    g2, _ = read_safetensors(grads2)
    worst = 0.0
    for n in shapes:
        a, b = f32_values(g[n + ".grad"][2]), f32_values(g2[n + ".grad"][2])
        scale = max(abs(x) for x in b) or 1.0
        worst = max(worst, max(abs(x - y) for x, y in zip(a, b)) / scale)
    check(worst < 1e-4, "%s and %s gradients agree (max error %.2g of the largest)" % (DEVICE, other, worst))

    # Central differences of the f32 eval loss (step 3e-2: rounding noise and curvature ~1e-5).
    def loss_at(name, index, delta):
        shape, values = params[name]
        edited = dict(params)
        edited[name] = (shape, values[:index] + [f32(values[index] + delta)] + values[index + 1:])
        path = os.path.join(WORK, "p_fd.safetensors")
        write_safetensors(path, edited)
        text = amp_run(bundle, "--data=" + data, "--params=" + path)
        actual = f32(values[index] + delta) - values[index]
        return float(text.split("loss = ")[1].split()[0]), actual
    # The last layer, where the loss is smooth (no ReLU kink within the step): two biases and the
    # two weights with the largest gradients.
    w3 = f32_values(g["fc3.weight.grad"][2])
    largest = sorted(range(len(w3)), key=lambda i: -abs(w3[i]))[:2]
    for name, index in [("fc3.bias", 0), ("fc3.bias", 7)] + [("fc3.weight", i) for i in largest]:
        (up, du), (down, dd) = loss_at(name, index, 3e-2), loss_at(name, index, -3e-2)
        fd = (up - down) / (du - dd)
        got = f32_values(g[name + ".grad"][2])[index]
        check(abs(got) > 1e-3 and abs(fd - got) <= 5e-5 + 5e-3 * abs(got),
              "d loss / d %s[%d] = %.6g, finite differences %.6g" % (name, index, got, fd))

    # One SGD step (lr 0.5, no momentum or decay) on the same batch moves each param by -0.5 * grad.
    ckpt = os.path.join(WORK, "ckpt")
    amp_run(bundle, "--entry=train_step", "--data=" + data, "--params=" + p0, "--checkpoint=" + ckpt)
    p1, meta = read_safetensors(os.path.join(ckpt, "checkpoint.safetensors"))
    check(meta.get("step") == "1", "the train_step entry saved its state as step 1")
    mismatched = 0
    for n in shapes:
        expected = [f32(p - 0.5 * d) for p, d in zip(params[n][1], f32_values(g[n + ".grad"][2]))]
        mismatched += sum(1 for x, y in zip(f32_values(p1[n][2]), expected) if x != y)
    check(mismatched == 0, "train_step applied exactly p - 0.5 * grad to every element (%d differ)" % mismatched)


def entry_mode():
    """One entry is run honestly: train_step updates and saves the state, bitwise what training on
    the same exact batch (--shuffle=false) does; options a mode does not use are named errors."""
    bundle = os.path.join(WORK, "mlp.ampx")
    ampc(MLP, bundle, "--train", "--precision=bf16", "--optimizer=adamw")
    data = os.path.join(WORK, "batch.npz")
    synthetic_data(data, 128)
    by_entry, by_training = os.path.join(WORK, "entry"), os.path.join(WORK, "train")
    out = amp_run(bundle, "--entry=train_step", "--data=" + data, "--checkpoint=" + by_entry,
                  "--output=" + os.path.join(WORK, "o.safetensors"))
    check("loss = " in out and "found_inf = 0" in out, "the step's named results are printed")
    amp_run(bundle, "--data=" + data, "--steps=1", "--shuffle=false", "--checkpoint=" + by_training)
    a, meta_a = read_safetensors(os.path.join(by_entry, "checkpoint.safetensors"))
    b, meta_b = read_safetensors(os.path.join(by_training, "checkpoint.safetensors"))
    check(sorted(a) == sorted(b) and all(a[k] == b[k] for k in a) and meta_a["step"] == meta_b["step"] == "1",
          "--entry=train_step and one training step on the exact batch save identical state (%d buffers)" % len(a))
    # A second step from the saved state, both ways.
    amp_run(bundle, "--entry=train_step", "--data=" + data, "--checkpoint=" + by_entry, "--resume")
    amp_run(bundle, "--data=" + data, "--steps=1", "--checkpoint=" + by_training, "--resume")
    a, meta_a = read_safetensors(os.path.join(by_entry, "checkpoint.safetensors"))
    b, meta_b = read_safetensors(os.path.join(by_training, "checkpoint.safetensors"))
    check(all(a[k] == b[k] for k in a) and meta_a["step"] == meta_b["step"] == "2" and meta_b["shuffle"] == "false",
          "... and after a resumed second step")
    amp_run_path = os.path.join(BIN, "amp-run")
    for flags, named in ((["--entry=eval", "--steps=3"], "--entry"), (["--metrics=m.jsonl"], "--metrics"),
                         (["--steps=2", "--output=o.safetensors"], "--output"), (["--shuffle=false"], "--shuffle"),
                         (["--epochs=1", "--steps=1"], "--epochs excludes --steps"),
                         (["--resume"], "--resume needs --checkpoint")):
        out = run_fails(amp_run_path, bundle, "--data=" + data, *flags)
        check(named in out, "%s: the error names %s" % (" ".join(flags), named))
    out = run_fails(amp_run_path, bundle, "--entry=grads", "--data=" + data, "--checkpoint=" + by_entry)
    check("updates no state" in out, "--checkpoint with an entry that updates nothing is refused")
    out = amp_run(bundle, "--entry=eval", "--data=" + data, "--resume=false")
    check("logits: f32 [128, 10]" in out, "--resume=false does not resume; eval results are named (logits)")


def interrupted():
    """SIGTERM during training stops after the current step with a checkpoint of that step; resuming
    from it ends bitwise where an uninterrupted run ends."""
    import signal
    import time
    bundle = os.path.join(WORK, "mlp.ampx")
    ampc(MLP, bundle, "--train", "--precision=bf16")
    data = os.path.join(WORK, "data.npz")
    synthetic_data(data, 512)
    straight, stopped = os.path.join(WORK, "straight"), os.path.join(WORK, "stopped")
    amp_run(bundle, "--data=" + data, "--steps=300", "--checkpoint=" + straight)
    args = [os.path.join(BIN, "amp-run"), bundle, "--device=" + DEVICE, "--data=" + data, "--steps=300",
            "--log-every=1", "--checkpoint=" + stopped]
    print("+", " ".join(args), flush=True)
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for line in proc.stdout:
        if "step 5/300" in line:
            proc.send_signal(signal.SIGTERM)
            break
    rest = proc.stdout.read()
    code = proc.wait()
    print(rest[-1500:], flush=True)
    check(code == 128 + signal.SIGTERM, "amp-run exits with 128 + SIGTERM (%d)" % code)
    check("interrupted by signal %d" % signal.SIGTERM in rest and "checkpoint saved" in rest, "it says it stopped")
    _, meta = read_safetensors(os.path.join(stopped, "checkpoint.safetensors"))
    done = int(meta["step"])
    check(5 <= done < 300, "the checkpoint holds step %d, a finished step" % done)
    amp_run(bundle, "--data=" + data, "--steps=%d" % (300 - done), "--checkpoint=" + stopped, "--resume")
    a, _ = read_safetensors(os.path.join(straight, "checkpoint.safetensors"))
    b, _ = read_safetensors(os.path.join(stopped, "checkpoint.safetensors"))
    check(all(a[k] == b[k] for k in a), "resumed after the stop, the state is bitwise that of the straight run")


def killed():
    """SIGKILL at 50 seeded-random moments (inside steps and inside checkpoint writes, which happen
    every step): the newest checkpoint always loads, and resuming from it after every kill ends
    bitwise where an uninterrupted run ends."""
    import random
    import signal
    import time
    bundle = os.path.join(WORK, "mlp.ampx")
    ampc(MLP, bundle, "--train", "--precision=bf16", "--optimizer=adamw")
    data = os.path.join(WORK, "data.npz")
    synthetic_data(data, 512)
    total = 300
    straight, killed_dir = os.path.join(WORK, "straight"), os.path.join(WORK, "killed")
    amp_run(bundle, "--data=" + data, "--steps=%d" % total, "--checkpoint=" + straight)
    ckpt = os.path.join(killed_dir, "checkpoint.safetensors")
    rng = random.Random(12345)
    kills, finished, resumes, in_writes = 0, False, 0, 0

    def done_steps():
        if not os.path.exists(ckpt):
            return 0
        _, meta = read_safetensors(ckpt)  # a torn file would fail here or in amp-run's resume
        return int(meta["step"])
    while not finished or kills < 50:
        if finished:  # a fast machine reached the end before 50 kills: go round again from scratch
            shutil.rmtree(killed_dir)
            finished = False
        step = done_steps()
        args = [os.path.join(BIN, "amp-run"), bundle, "--device=" + DEVICE, "--data=" + data,
                "--steps=%d" % (total - step), "--checkpoint-every=1", "--log-every=1",
                "--checkpoint=" + killed_dir]
        if step:
            args.append("--resume")
            resumes += 1
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if kills < 50:
            if kills % 2:
                # Aligned to a step: its progress line follows its checkpoint, so a few ms later the
                # next step's checkpoint is being written.
                target = rng.randint(1, 3)
                for line in proc.stdout:
                    if line.startswith("[") and " step " in line:
                        target -= 1
                        if target == 0:
                            break
                time.sleep(rng.uniform(0.001, 0.012))
            else:
                time.sleep(rng.uniform(0.03, 0.25))
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                kills += 1
        out = proc.communicate()[0]
        if proc.returncode == -signal.SIGKILL:
            # A writer killed mid-write leaves its temporary file; the next save removes it.
            in_writes += any(".tmp." in f for f in os.listdir(killed_dir)) if os.path.isdir(killed_dir) else 0
            continue
        if proc.returncode != 0:
            print(out[-2000:])
            check(False, "a run after a kill failed (exit %d)" % proc.returncode)
        finished = done_steps() == total
    check(kills == 50, "killed amp-run 50 times, %d of them inside a checkpoint write; every newest checkpoint "
          "loaded (%d resumes)" % (in_writes, resumes))
    leftovers = [f for f in os.listdir(killed_dir) if f != "checkpoint.safetensors"]
    check(not leftovers, "no temporary file of a killed writer is left behind (%s)" % ", ".join(leftovers))
    a, _ = read_safetensors(os.path.join(straight, "checkpoint.safetensors"))
    b, _ = read_safetensors(ckpt)
    check(sorted(a) == sorted(b) and all(a[k] == b[k] for k in a),
          "after 50 kills and resumes the state is bitwise that of the uninterrupted %d-step run" % total)


def full_disk():
    """Write errors without root tricks: a file-size limit (RLIMIT_FSIZE, like `ulimit -f`; amp-run
    ignores SIGXFSZ so the write fails with EFBIG) and /dev/full (ENOSPC). Each is a non-zero exit
    naming the file and the OS error; a failed checkpoint write leaves the previous checkpoint
    bitwise intact, and training resumes from it."""
    import resource
    bundle = os.path.join(WORK, "mlp.ampx")
    ampc(MLP, bundle, "--train", "--precision=f32")
    data = os.path.join(WORK, "data.npz")
    synthetic_data(data, 256)
    amp_run_path = os.path.join(BIN, "amp-run")

    def run_limited(limit, *args):
        """amp-run under a file-size limit of `limit` bytes; its output and exit status."""
        args = (amp_run_path, args[0], "--device=" + DEVICE) + args[1:]
        print("+ (ulimit -f %d bytes)" % limit, " ".join(args), flush=True)
        proc = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit)))
        print(proc.stdout[-2000:], flush=True)
        return proc.returncode, proc.stdout

    ckpt = os.path.join(WORK, "ckpt")
    path = os.path.join(ckpt, "checkpoint.safetensors")
    amp_run(bundle, "--data=" + data, "--steps=2", "--checkpoint=" + ckpt)
    with open(path, "rb") as f:
        before = f.read()
    code, out = run_limited(len(before) // 2, bundle, "--data=" + data, "--steps=1", "--checkpoint=" + ckpt,
                            "--resume")
    check(code == 1, "a checkpoint write over the file-size limit exits 1, not killed by SIGXFSZ (%d)" % code)
    check(path + ": write failed after %d bytes: File too large" % (len(before) // 2) in out and
          "saving the checkpoint of step 3" in out, "the error names the checkpoint, the OS error and the step")
    with open(path, "rb") as f:
        check(f.read() == before, "the previous checkpoint is bitwise unchanged")
    check(os.listdir(ckpt) == ["checkpoint.safetensors"], "the failed write left no temporary file")
    amp_run(bundle, "--data=" + data, "--steps=1", "--checkpoint=" + ckpt, "--resume")
    straight = os.path.join(WORK, "straight")
    amp_run(bundle, "--data=" + data, "--steps=3", "--checkpoint=" + straight)
    a, meta = read_safetensors(path)
    b, _ = read_safetensors(os.path.join(straight, "checkpoint.safetensors"))
    check(meta["step"] == "3" and a == b, "resumed from the intact checkpoint, step 3 is bitwise the straight run's")

    # The summary and the metrics log under a limit set once training runs (prlimit: a limit from
    # the start would first stop the cpu device's native code, which goes to a memfd, also a file).
    def limit_after_first_step(limit_of, *args):
        args = [amp_run_path, args[0], "--device=" + DEVICE, "--log-every=1"] + list(args[1:])
        print("+", " ".join(args), flush=True)
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        out = ""
        for line in proc.stdout:
            out += line
            if " step 1/" in line:
                limit = limit_of()
                print("(prlimit RLIMIT_FSIZE %d bytes)" % limit, flush=True)
                resource.prlimit(proc.pid, resource.RLIMIT_FSIZE, (limit, limit))
                break
        out += proc.stdout.read()
        code = proc.wait()
        print(out[-2000:], flush=True)
        return code, out

    summary = os.path.join(WORK, "s.json")
    code, out = limit_after_first_step(lambda: 100, bundle, "--data=" + data, "--steps=30", "--summary=" + summary)
    check(code == 1 and summary + ": write failed after 100 bytes: File too large" in out,
          "--summary over the file-size limit names the file and the error")
    check(not os.path.exists(summary), "and leaves no partial summary")
    metrics = os.path.join(WORK, "m.jsonl")
    code, out = limit_after_first_step(lambda: os.path.getsize(metrics) + 10, bundle, "--data=" + data,
                                       "--steps=30", "--metrics=" + metrics)
    check(code == 1 and metrics + ": cannot write the metrics file: File too large" in out,
          "--metrics over the file-size limit names the file and the error")
    # Below x86-64-v3 (AMP_CPU_FEATURES=x86-64, scripts/cpu-level-tests.sh) no code object loads.
    if DEVICE == "cpu" and os.environ.get("AMP_CPU_FEATURES") != "x86-64":
        code, out = run_limited(4096, bundle, "--data=" + data, "--steps=1")
        check(code == 1 and "native kernels into memory: File too large" in out,
              "a limit below the native code's size stops the cpu device with a located error")
    for flag, message in (("--summary=/dev/full", "/dev/full: write failed after 0 bytes: No space left on device"),
                          ("--metrics=/dev/full", "/dev/full: cannot write the metrics file: No space left on device")):
        out = run_fails(amp_run_path, bundle, "--device=" + DEVICE, "--data=" + data, "--steps=2", flag)
        check(message in out, "%s: %s" % (flag, message))
    check(os.path.exists("/dev/full") and not os.path.isfile("/dev/full"), "/dev/full is still a device")


def overflow_provenance():
    """--check-numerics tells a forward overflow (an error naming the op, its line and precision,
    with what to change) from a gradient overflow under loss scaling (counted: the scaler skips
    those steps, and training goes on)."""
    bundle = os.path.join(WORK, "mlp_f16.ampx")
    ampc(MLP, bundle, "--train", "--precision=f16", "--optimizer=adamw")
    labels = [i % 10 for i in range(128)]
    bad = os.path.join(WORK, "bad.npz")
    # 60000 fits in f16, but 784 such products overflow the f16 result of the first linear layer.
    write_npz(bad, {"image": npy("f", (128, 784), [60000.0] * (128 * 784)), "label": npy("q", (128,), labels)})
    out = run_fails(os.path.join(BIN, "amp-run"), bundle, "--device=" + DEVICE, "--data=" + bad, "--steps=1",
                    "--check-numerics")
    check("mlp.mlir:15:9" in out and "(amp.linear) produced a non-finite value" in out and
          "in the forward pass, computing in f16" in out and "No loss scale can cure a forward overflow" in out
          and 'amp.precision = "f32"' in out,
          "a forward overflow names the first linear layer (mlp.mlir:15:9), its precision, and the fix")

    # A loss scale of 2^40 overflows the f16 gradients until it has backed off to about 2^16.
    scaled = os.path.join(WORK, "mlp_f16_huge_scale.ampx")
    ampc(MLP, scaled, "--train", "--precision=f16", "--init-scale=1099511627776")
    data = os.path.join(WORK, "data.npz")
    synthetic_data(data, 256)
    summary = os.path.join(WORK, "s.json")
    out = amp_run(scaled, "--data=" + data, "--steps=40", "--check-numerics", "--summary=" + summary)
    with open(summary) as f:
        s = json.load(f)
    first = s.get("first_gradient_overflow", {})
    check(s["gradient_overflow_steps"] >= 5 and s["gradient_overflow_steps"] == s["overflow_steps"] and
          first.get("step") == 1 and first.get("dtype") == "f16" and "mlp.mlir:" in first.get("loc", ""),
          "gradient overflows under loss scaling are counted, not fatal (%d steps; first: %s)" %
          (s["gradient_overflow_steps"], first))
    check("Loss scaling handles this" in out and "the forward pass stayed finite" in out, "and explained")
    check(s["steps"] == 40 and s["overflow_steps"] < 40, "training went on and recovered")

    # With accumulation the returned loss is the window's mean, computed after the backward pass:
    # the backward of @train_step is still the backward (it once counted as forward, and the first
    # gradient overflow stopped training as a forward one).
    accumulating = os.path.join(WORK, "mlp_f16_huge_scale_acc.ampx")
    ampc(MLP, accumulating, "--train", "--precision=f16", "--init-scale=1099511627776", "--accumulate=2")
    out = amp_run(accumulating, "--data=" + data, "--steps=20", "--check-numerics", "--summary=" + summary)
    with open(summary) as f:
        s = json.load(f)
    check(s["steps"] == 20 and s["gradient_overflow_steps"] >= 5 and s["gradient_overflow_steps"] == s["overflow_steps"],
          "--accumulate=2: gradient overflows in both entries are counted, not fatal (%d of 20 steps)" %
          s["gradient_overflow_steps"])


def fused_pipeline():
    """ampc's amp-fuse-grad-pipeline changes memory traffic, never numbers: the fused and the
    unfused (--fuse=false) bundles train to bitwise equal params, moments, weight copies, scale and
    counters (f16 SGD with momentum, dynamic loss scaling and clipping; bf16 AdamW)."""
    configs = {"sgd_f16": ["--precision=f16", "--optimizer=sgd", "--momentum=0.9", "--clip-grad-norm=0.5"],
               "adamw_bf16": ["--precision=bf16", "--optimizer=adamw"]}
    common = ["--data=fashion-mnist", "--seed=4", "--steps=4", "--eval-every=1000000"]
    for name, flags in configs.items():
        fused, unfused = os.path.join(WORK, name + ".ampx"), os.path.join(WORK, name + "_unfused.ampx")
        ampc(MLP, fused, "--train", *flags)
        ampc(MLP, unfused, "--train", "--fuse=false", *flags)
        ops = {}
        for path in (fused, unfused):
            def count(plan, path=path):
                train_step = [e for e in plan["entries"] if e["name"] == "train_step"][0]
                ops[path] = [s["op"] for s in train_step["steps"]]
            edit_plan(path, os.path.join(WORK, "scratch.ampx"), count)
        check(ops[fused].count("amp.grad_stats") == 1 and "amp.unscale_check" not in ops[fused],
              "%s: the fused step has one amp.grad_stats and no amp.unscale_check" % name)
        check("amp.grad_stats" not in ops[unfused] and ops[unfused].count("amp.unscale_check") == 1,
              "%s: --fuse=false keeps the unfused pipeline" % name)
        for path, out in ((fused, "a"), (unfused, "b")):
            train(path, os.path.join(WORK, out + ".json"), *common, "--checkpoint=" + os.path.join(WORK, name + out))
        a, _ = read_safetensors(os.path.join(WORK, name + "a", "checkpoint.safetensors"))
        b, _ = read_safetensors(os.path.join(WORK, name + "b", "checkpoint.safetensors"))
        check(sorted(a) == sorted(b), "%s: same %d state tensors" % (name, len(a)))
        differing = [k for k in a if a[k] != b[k]]
        check(not differing, "%s: every tensor bitwise equal after 4 steps%s" %
              (name, "" if not differing else ": differ " + ", ".join(differing)))


def weight_copies():
    """Recast weight copies change memory, never numbers: bundles compiled with
    --weight-copies=stored (state <param>.<dtype> written by the optimizer) and =recast (a cast
    before each use) train to bitwise equal params, moments, scale and counters, with dynamic f16
    scaling and clipping, bf16 AdamW, gradient accumulation and the transformer; only the stored
    bundle carries copies, and the recast one plans fewer bytes."""
    lm_data = os.path.join(WORK, "lm.npz")
    run(sys.executable, os.path.join(SRC, "examples", "make_lm_data.py"), lm_data, "--sequences=64")
    lm = os.path.join(SRC, "examples", "transformer_lm.mlir")
    configs = {
        "sgd_f16_clip": (MLP, "fashion-mnist", ["--precision=f16", "--optimizer=sgd", "--momentum=0.9",
                                                "--clip-grad-norm=0.5"]),
        "adamw_bf16": (MLP, "fashion-mnist", ["--precision=bf16", "--optimizer=adamw"]),
        "adamw_bf16_accumulate": (MLP, "fashion-mnist", ["--precision=bf16", "--optimizer=adamw", "--accumulate=2"]),
        "lm_bf16": (lm, lm_data, ["--precision=bf16", "--lr=3e-3"]),
    }
    for name, (model, data, flags) in configs.items():
        ckpt = {}
        persistent = {}
        for mode in ("stored", "recast"):
            bundle = os.path.join(WORK, "%s_%s.ampx" % (name, mode))
            ampc(model, bundle, "--train", "--weight-copies=" + mode, *flags)
            r = train(bundle, os.path.join(WORK, "%s_%s.json" % (name, mode)), "--data=" + data, "--seed=3",
                      "--steps=4", "--eval-every=1000000", "--checkpoint=" + os.path.join(WORK, name + mode))
            persistent[mode] = r["persistent_bytes"]
            ckpt[mode], _ = read_safetensors(os.path.join(WORK, name + mode, "checkpoint.safetensors"))
        copies = [k for k in ckpt["stored"] if k.endswith(".bf16") or k.endswith(".f16")]
        check(copies and not any(k in ckpt["recast"] for k in copies),
              "%s: only the stored bundle keeps weight copies (%d)" % (name, len(copies)))
        check(persistent["recast"] < persistent["stored"], "%s: recast keeps %d persistent bytes, stored %d" %
              (name, persistent["recast"], persistent["stored"]))
        common = sorted(k for k in ckpt["stored"] if k not in copies)
        check(common == sorted(ckpt["recast"]), "%s: the same %d other tensors" % (name, len(common)))
        differing = [k for k in common if ckpt["stored"][k] != ckpt["recast"][k]]
        check(not differing, "%s: every tensor bitwise equal after 4 steps%s" %
              (name, "" if not differing else ": differ " + ", ".join(differing)))


def remat():
    """amp-remat changes memory, never numbers: the transformer compiled with --remat=auto and with
    --memory-budget (which recomputes GEMMs too) trains to the same bits as without, and its step
    holds fewer bytes of temporaries; an impossible budget is a located error."""
    data = os.path.join(WORK, "lm.npz")
    run(sys.executable, os.path.join(SRC, "examples", "make_lm_data.py"), data, "--sequences=64")
    lm = os.path.join(SRC, "examples", "transformer_lm.mlir")
    variants = {"base": ["--remat=off"], "auto": [], "budget": ["--memory-budget=1.4m"]}
    ckpt, workspace = {}, {}
    for name, flags in variants.items():
        bundle = os.path.join(WORK, name + ".ampx")
        ampc(lm, bundle, "--train", "--precision=bf16", "--lr=3e-3", *flags)
        r = train(bundle, os.path.join(WORK, name + ".json"), "--data=" + data, "--seed=3", "--steps=4",
                  "--eval-every=1000000", "--checkpoint=" + os.path.join(WORK, name))
        workspace[name] = r["workspace_bytes"]
        ckpt[name], _ = read_safetensors(os.path.join(WORK, name, "checkpoint.safetensors"))
    for name in ("auto", "budget"):
        check(sorted(ckpt[name]) == sorted(ckpt["base"]), "%s: the same %d tensors" % (name, len(ckpt["base"])))
        differing = [k for k in ckpt["base"] if ckpt[name][k] != ckpt["base"][k]]
        check(not differing, "%s: every tensor bitwise equal to no recompute after 4 steps%s" %
              (name, "" if not differing else ": differ " + ", ".join(differing)))
        if DEVICE == "cpu":  # the device that allocates ampc's planned arena (the reference allocates per value)
            check(workspace[name] < workspace["base"], "%s: %d bytes of workspace, without recompute %d" %
                  (name, workspace[name], workspace["base"]))
    proc = subprocess.run([os.path.join(BIN, "ampc"), lm, "--train", "--precision=bf16", "--memory-budget=512k",
                           "-o", os.path.join(WORK, "tight.ampx")], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True)
    check(proc.returncode != 0 and "transformer_lm.mlir:" in proc.stdout and "over the budget of 524288 bytes"
          in proc.stdout, "a budget of 512 KiB is refused with a located error: " + proc.stdout.strip()[-300:])


def torch_python():
    """A Python that has torch, onnx and numpy (Debian's python3-torch), or None."""
    for candidate in [os.environ.get("AMP_TORCH_PYTHON"), "/usr/bin/python3", sys.executable]:
        if candidate and subprocess.run([candidate, "-c", "import torch, onnx, numpy"], stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL).returncode == 0:
            return candidate
    return None


def onnx_torch_parity(oracle, model, name):
    """Runs `oracle` (test/e2e/*_oracle.py: exports `model` with PyTorch 1.13, opset 17, training
    mode, and records PyTorch autograd on it), imports the model with ampc --train, and checks its
    loss and every gradient at the exported weights (which the bundle holds), and three SGD steps,
    against PyTorch in f32. Skipped (77) without torch."""
    python = torch_python()
    if python is None:
        print("skipped: no Python with torch, onnx and numpy (Debian: python3-torch python3-onnx)")
        sys.exit(77)
    run(python, os.path.join(SRC, "test", "e2e", oracle), WORK)
    with open(os.path.join(WORK, "torch.json")) as f:
        expected = json.load(f)
    bundle = os.path.join(WORK, name + ".ampx")
    ampc(os.path.join(WORK, model), bundle, "--loss=cross_entropy:logits", "--batch=%d" % expected["batch"],
         "--train", "--precision=f32", "--optimizer=sgd", "--momentum=0", "--weight-decay=0",
         "--lr=%g" % expected["lr"])
    check(not [f for f in os.listdir(WORK) if f.endswith(".params.safetensors")],
          "the bundle holds the ONNX initializers: ampc writes no parameter file beside it")
    data = os.path.join(WORK, "batch.npz")
    grads = os.path.join(WORK, "g.safetensors")
    amp_run(bundle, "--entry=grads", "--data=" + data, "--output=" + grads)
    g, _ = read_safetensors(grads)

    def relative_error(got, want):
        scale = max(abs(v) for v in want) or 1.0
        return max(abs(a - b) for a, b in zip(got, want)) / scale

    loss = f32_values(g["loss"][2])[0]
    check(abs(loss - expected["losses"][0]) <= 1e-5 * abs(expected["losses"][0]),
          "loss %.8g, PyTorch %.8g" % (loss, expected["losses"][0]))
    for param, want in sorted(expected["grads"].items()):
        err = relative_error(f32_values(g[param][2]), want)
        check(err <= 1e-5, "%s matches PyTorch autograd (max error %.2g of the largest)" % (param, err))

    metrics = os.path.join(WORK, "metrics.jsonl")
    ckpt = os.path.join(WORK, "ckpt")
    amp_run(bundle, "--data=" + data, "--steps=%d" % expected["steps"], "--shuffle=false",
            "--eval-every=0", "--metrics=" + metrics, "--checkpoint=" + ckpt)
    with open(metrics) as f:
        losses = [json.loads(line)["loss"] for line in f if json.loads(line)["kind"] == "step"]
    check(len(losses) == expected["steps"] and
          all(abs(a - b) <= 1e-5 * abs(b) for a, b in zip(losses, expected["losses"])),
          "per-step losses %s, PyTorch %s" % (["%.7g" % v for v in losses], ["%.7g" % v for v in expected["losses"]]))
    trained, _ = read_safetensors(os.path.join(ckpt, "checkpoint.safetensors"))
    for param, want in sorted(expected["params"].items()):
        err = relative_error(f32_values(trained[param][2]), want)
        check(err <= 1e-5, "%s after %d SGD steps matches PyTorch (max error %.2g of the largest)" %
              (param, expected["steps"], err))


def onnx_mlp_torch():
    """An MLP exported by PyTorch (Gemm, Relu, Flatten) against PyTorch autograd."""
    onnx_torch_parity("onnx_mlp_oracle.py", "mlp.onnx", "mlp")


def onnx_transformer_torch():
    """A pre-norm transformer LM exported by PyTorch (embedding, causal mask built by
    ConstantOfShape -> Trilu -> Where, multi-head attention, LayerNormalization, the exact GELU as
    Div -> Erf -> Add -> Mul -> Mul, a [B, T, V] cross-entropy) against PyTorch autograd."""
    onnx_torch_parity("onnx_transformer_oracle.py", "model.onnx", "lm")


def onnx_gpt_grads_torch():
    """examples/gpt_lm.py's GPT-style LM itself (GptLM with its defaults: 2 pre-norm layers, width
    128, 4 heads, sequence 128, learned positions, final LayerNorm; vocabulary 86, batch 2 of random
    tokens; test/e2e/onnx_gpt_oracle.py): the loss and all 30 gradients, and three SGD steps,
    against PyTorch autograd in f32."""
    onnx_torch_parity("onnx_gpt_oracle.py", "model.onnx", "gpt")


def onnx_resnet_torch():
    """torchvision's ResNet-18 exported by PyTorch in training mode (Conv, BatchNormalization with
    batch statistics, MaxPool, residual Adds, GlobalAveragePool, Gemm): the loss, every gradient,
    and the params and BatchNorm running statistics after an SGD step against PyTorch in f64, as
    close as PyTorch's own f32 is within 3x (test/e2e/onnx_resnet_oracle.py says why)."""
    python = torch_python()
    if python is None or subprocess.run([python, "-c", "import torchvision"], stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL).returncode != 0:
        print("skipped: no Python with torch, torchvision, onnx and numpy (Debian: python3-torchvision)")
        sys.exit(77)
    oracle = os.path.join(SRC, "test", "e2e", "onnx_resnet_oracle.py")
    run(python, oracle, "export", WORK)
    with open(os.path.join(WORK, "torch.json")) as f:
        expected = json.load(f)
    bundle = os.path.join(WORK, "resnet18.ampx")
    ampc(os.path.join(WORK, "model.onnx"), bundle, "--loss=cross_entropy:logits", "--batch=%d" % expected["batch"],
         "--train", "--precision=f32", "--optimizer=sgd", "--momentum=0", "--weight-decay=0", "--lr=%g" % expected["lr"])
    data = os.path.join(WORK, "batch.npz")
    grads = os.path.join(WORK, "g.safetensors")
    amp_run(bundle, "--entry=grads", "--data=" + data, "--output=" + grads)
    ckpt = os.path.join(WORK, "ckpt")
    amp_run(bundle, "--data=" + data, "--steps=%d" % expected["steps"], "--shuffle=false", "--eval-every=0",
            "--checkpoint=" + ckpt)
    run(python, oracle, "compare", WORK, grads, os.path.join(ckpt, "checkpoint.safetensors"))


def onnx_gpt_torch():
    """examples/gpt_lm.py's GPT-style character LM (2 pre-norm layers, width 128, sequence 128),
    exported by PyTorch and imported by ampc at batch 16, learns the license texts Debian ships:
    bf16's loss curve follows f32's, and amp-remat (ampc's default --remat=auto, and a memory
    budget) keeps the same bits as --remat=off in less memory. Skipped (77) without torch."""
    python = torch_python()
    if python is None:
        print("skipped: no Python with torch, onnx and numpy (Debian: python3-torch python3-onnx)")
        sys.exit(77)
    run(python, os.path.join(SRC, "examples", "gpt_lm.py"), WORK)
    data = os.path.join(WORK, "text.npz")
    common = ("--batch=16", "--loss=cross_entropy:logits,label=label", "--train", "--optimizer=adamw", "--lr=1e-3")
    steps = 120
    curves, summaries = {}, {}
    for name, flags in (("f32", ("--precision=f32",)), ("bf16_off", ("--precision=bf16", "--remat=off")),
                        ("bf16", ("--precision=bf16",)), ("bf16_budget", ("--precision=bf16", "--memory-budget=21m"))):
        bundle = os.path.join(WORK, name + ".ampx")
        ampc(os.path.join(WORK, "gpt.onnx"), bundle, *common, *flags)
        metrics = os.path.join(WORK, name + ".jsonl")
        summaries[name] = train(bundle, os.path.join(WORK, name + ".json"), "--data=" + data, "--steps=%d" % steps,
                                "--seed=3", "--log-every=40", "--metrics=" + metrics)
        with open(metrics) as f:
            curves[name] = [r["loss"] for r in map(json.loads, f) if r["kind"] == "step"]
    tail = {name: sum(c[-20:]) / 20 for name, c in curves.items()}
    first = curves["f32"][0]
    check(tail["f32"] <= 0.6 * first, "f32 loss fell from %.3f to %.3f (mean of the last 20 steps)" % (first, tail["f32"]))
    check(abs(tail["bf16"] - tail["f32"]) <= 0.02 * tail["f32"],
          "bf16's loss %.4f follows f32's %.4f (within 2%%)" % (tail["bf16"], tail["f32"]))
    for name in ("bf16", "bf16_budget"):
        check(curves[name] == curves["bf16_off"], "%s: every step's loss has the bits of --remat=off" % name)
    peak = {name: summaries[name]["peak_memory_bytes"] for name in ("bf16_off", "bf16", "bf16_budget")}
    check(peak["bf16"] <= 0.8 * peak["bf16_off"], "--remat=auto: the peak falls from %d to %d bytes (%.2fx)" %
          (peak["bf16_off"], peak["bf16"], peak["bf16"] / peak["bf16_off"]))
    check(peak["bf16_budget"] < peak["bf16"], "--memory-budget=21m: and further, to %d bytes (%.2fx of --remat=off)" %
          (peak["bf16_budget"], peak["bf16_budget"] / peak["bf16_off"]))


SCENARIOS = {f.__name__: f for f in (mlp_precisions, lm_learns, resume_bitwise, accumulation, clipping,
                                     injected_overflow, bad_inputs, scaler_replay, grads_entry, entry_mode, interrupted, killed, overflow_provenance,
                                     full_disk, fused_pipeline, weight_copies, remat, onnx_mlp_torch,
                                     onnx_transformer_torch, onnx_gpt_grads_torch, onnx_resnet_torch,
                                     onnx_gpt_torch, streamed_data)}
try:
    SCENARIOS[SCENARIO]()
finally:
    shutil.rmtree(WORK, ignore_errors=True)
