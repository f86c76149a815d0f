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


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        out[name] = (info["dtype"], info["shape"], data[8 + n + begin:8 + n + end])
    return out, header.get("__metadata__", {})


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


def f32_values(raw):
    return struct.unpack("<%df" % (len(raw) // 4), raw)


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


def mlp_precisions():
    """Two epochs of Fashion-MNIST in f32, bf16 and f16 (dynamic loss scaling)."""
    results = {}
    for precision in ("f32", "bf16", "f16"):
        bundle = os.path.join(WORK, "mlp_%s.ampx" % precision)
        ampc(MLP, bundle, "--train", "--precision=" + precision, "--lr=2e-3")
        results[precision] = train(bundle, os.path.join(WORK, precision + ".json"),
                                   "--data=fashion-mnist", "--epochs=2", "--log-every=234")
    for precision, r in results.items():
        check(r["precision"] == precision, "%s bundle reports precision %s" % (precision, r["precision"]))
        check(r["eval_accuracy"] >= 0.84, "%s test accuracy %.4f >= 0.84" % (precision, r["eval_accuracy"]))
    check(results["f16"]["loss_scaling"] == "dynamic", "f16 trains with dynamic loss scaling")
    check(results["bf16"]["loss_scaling"] == "none", "bf16 trains without loss scaling")
    base = results["f32"]["final_loss"]
    for precision in ("bf16", "f16"):
        rel = abs(results[precision]["final_loss"] - base) / base
        check(rel <= 0.03, "%s final loss %.4f within 3%% of f32 %.4f (%.2f%%)" % (
            precision, results[precision]["final_loss"], base, 100 * rel))
    check(os.path.exists(os.path.join(WORK, "f16.svg")), "a loss/scale curve is written next to the summary")


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

    wrong = os.path.join(WORK, "labels.npz")
    write_npz(wrong, {"image": npy("f", (128, 784), [0.5] * (128 * 784)),
                      "label": npy("q", (128,), [12] * 128)})
    out = run_fails_on_device(amp_run, bundle, "--data=" + wrong, "--steps=1")
    check("label 12 at position [0] is out of range [0, 10)" in out and "mlp.mlir:20:" in out,
          "an out-of-range label names itself and the loss op's source line")

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


SCENARIOS = {f.__name__: f for f in (mlp_precisions, lm_learns, resume_bitwise, accumulation, clipping,
                                     injected_overflow, bad_inputs)}
try:
    SCENARIOS[SCENARIO]()
finally:
    shutil.rmtree(WORK, ignore_errors=True)
