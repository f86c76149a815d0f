#!/usr/bin/env python3
"""The accuracy and memory cost of compact optimizer state (ampc --optimizer-state=bf16).

    /usr/bin/python3 bench/optimizer_state.py BUILD_BIN_DIR [--steps N] [--models resnet18,gpt]

Trains each model from the same initial weights over the same batches three ways on the cpu
device: f32 (f32 moments), bf16 autocast with f32 moments, and bf16 autocast with bf16 moments
(stochastic rounding), all AdamW. Then prints, per run, the final training loss (mean of the last
50 steps), the held-out loss and accuracy, the peak bytes the device allocated, the persistent
bytes (masters, moments, counters) and the median step time, and the bf16-state run against the
f32-state run of the same precision.

- resnet18: torchvision's ResNet-18 with a 1-channel stem (bench/onnx_models.py's
  onnx_resnet18_b128), batch 128, on Fashion-MNIST (amp-run --data=fashion-mnist; its test split
  is the held-out set).
- gpt: examples/gpt_lm.py's character GPT (2 layers, width 128, T = 128), batch 16, on the license
  texts every Debian system ships: the last tenth of the sequences is the held-out set (accuracy
  is next-character accuracy).

Needs torch and numpy (Debian: python3-torch, python3-onnx, python3-numpy).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RUNS = [("f32", "f32"), ("bf16", "f32"), ("bf16", "bf16")]  # (precision, optimizer state)


def run(cmd):
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if done.returncode != 0:
        sys.exit("failed (%d): %s\n%s" % (done.returncode, " ".join(cmd), done.stdout[-3000:]))
    return done.stdout


def resnet18(work):
    sys.path.insert(0, HERE)
    import onnx_models  # noqa: E402 (needs torch)
    onnx_models.export("onnx_resnet18_b128", work)
    return (os.path.join(work, "onnx_resnet18_b128.onnx"), ["--batch=128", "--loss=cross_entropy:logits"],
            ["--data=fashion-mnist"], 1e-3)


def gpt(work):
    run([sys.executable, os.path.join(ROOT, "examples", "gpt_lm.py"), work])
    data = np.load(os.path.join(work, "text.npz"))
    cut = len(data["tokens"]) * 9 // 10
    train, held = os.path.join(work, "train.npz"), os.path.join(work, "held.npz")
    np.savez(train, tokens=data["tokens"][:cut], label=data["label"][:cut])
    np.savez(held, tokens=data["tokens"][cut:], label=data["label"][cut:])
    return (os.path.join(work, "gpt.onnx"), ["--batch=16", "--loss=cross_entropy:logits,label=label"],
            ["--data=" + train, "--eval-data=" + held], 1e-3)


MODELS = {"resnet18": resnet18, "gpt": gpt}


def train(binDir, work, name, model, flags, data, lr, precision, state, steps):
    bundle = os.path.join(work, "%s.%s.%s.ampx" % (name, precision, state))
    run([os.path.join(binDir, "ampc"), model, "--train", "--precision=" + precision, "--optimizer=adamw",
         "--lr=%g" % lr, "--optimizer-state=" + state, "-o", bundle] + flags)
    summary = bundle + ".summary.json"
    run([os.path.join(binDir, "amp-run"), bundle, "--device=cpu", "--steps=%d" % steps, "--log-every=100",
         "--summary=" + summary] + data)
    with open(summary) as f:
        return json.load(f)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bin")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--models", default="resnet18,gpt")
    args = ap.parse_args()
    print("| model, steps | precision | moments | final loss | held-out loss | held-out accuracy | peak bytes | "
          "persistent bytes | step ms |")
    print("|---|---|---|---|---|---|---|---|---|")
    notes = []
    for name in args.models.split(","):
        with tempfile.TemporaryDirectory() as work:
            model, flags, data, lr = MODELS[name](work)
            results = {}
            for precision, state in RUNS:
                s = train(args.bin, work, name, model, flags, data, lr, precision, state, args.steps)
                results[(precision, state)] = s
                print("| %s, %d | %s | %s | %.4f | %.4f | %.4f | %d | %d | %.1f |" % (
                    name, args.steps, precision, state, s["final_loss"], s["eval_loss"], s["eval_accuracy"],
                    s["peak_memory_bytes"], s["persistent_bytes"], s["step_time_ms"]), flush=True)
            f32, mixed, compact = results[("f32", "f32")], results[("bf16", "f32")], results[("bf16", "bf16")]
            notes.append("%s: bf16 moments against f32 moments (bf16 autocast): final loss %+.4f, held-out accuracy "
                         "%+.4f; peak bytes %.3f of the f32-moment run's, %.3f of the f32 run's" % (
                             name, compact["final_loss"] - mixed["final_loss"],
                             compact["eval_accuracy"] - mixed["eval_accuracy"],
                             compact["peak_memory_bytes"] / mixed["peak_memory_bytes"],
                             compact["peak_memory_bytes"] / f32["peak_memory_bytes"]))
    print()
    for n in notes:
        print(n)


if __name__ == "__main__":
    main()
