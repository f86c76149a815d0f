#!/usr/bin/env python3
"""PyTorch's side of e2e.onnx_resnet_torch: torchvision's ResNet-18 (10 classes, a 1-channel stem
for Fashion-MNIST's 28x28 images) exported to ONNX in training mode as a user would, and what
PyTorch computes on the same weights and batch.

Usage (needs torch, torchvision, onnx and numpy: Debian's python3-torch and python3-torchvision):
  onnx_resnet_oracle.py export WORK_DIR
      writes WORK_DIR/model.onnx, WORK_DIR/batch.npz (image, label) and WORK_DIR/torch.npz: the loss
      and every gradient at the exported weights, and the params and BatchNorm running statistics
      after STEPS SGD steps, each computed in f64 and in f32.
  onnx_resnet_oracle.py compare WORK_DIR GRADS.safetensors CHECKPOINT.safetensors
      checks ampc's results (amp-run --entry=grads --output, and the checkpoint after STEPS steps)
      against them; prints ok/FAIL lines, exits 1 on a failure.

Why the gradients are compared with f64: with batch statistics over 4 images (layer4 normalises
each channel over 4 values) f32 rounding moves ResNet-18's gradients by about 1e-4 of their largest
value in any f32 implementation (PyTorch's own f32 gradients differ from its f64 ones by 7e-5). So
ampc's f32 gradients, and the params and running statistics after one SGD step, must be as close
to PyTorch's f64 ones as PyTorch's f32 ones are, within a factor of 3; the loss within 1e-5
relative. (Over several steps at this learning rate the two f32 trajectories part chaotically: by
the third step a BatchNorm bias differs by 60% between PyTorch f32 and ampc, so steps after the
first say nothing about correctness.)
"""
import json
import sys

import numpy as np
import onnx
import torch
import torchvision
from onnx import numpy_helper
from safetensors_numpy import read_arrays

STEPS, LR, BATCH = 1, 0.05, 4


def resnet18():
    model = torchvision.models.resnet18(num_classes=10)
    model.conv1 = torch.nn.Conv2d(1, 64, kernel_size=7, stride=2, padding=3, bias=False)
    return model


def load_exported(model, work, dtype):
    """The model's params and buffers set to what model.onnx holds (tracing in training mode
    updated the running statistics once), in `dtype`."""
    exported = {i.name: numpy_helper.to_array(i) for i in onnx.load(work + "/model.onnx").graph.initializer}
    model.to(dtype)
    with torch.no_grad():
        for name, value in list(model.named_parameters()) + list(model.named_buffers()):
            if name in exported:
                value.copy_(torch.from_numpy(exported[name].copy()).to(value.dtype))
    return model


def loss_and_grads(model, image, label):
    model.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(image.to(next(model.parameters()).dtype)), label)
    loss.backward()
    return loss.item(), {n + ".grad": p.grad.detach().double().numpy().copy() for n, p in model.named_parameters()}


def trained(work, dtype, image, label):
    """The loss and gradients at the exported weights, then the params and running statistics
    after STEPS SGD steps, computed in `dtype`."""
    model = load_exported(resnet18().train(), work, dtype)
    sgd = torch.optim.SGD(model.parameters(), lr=LR)
    for step in range(STEPS):
        # Each forward pass in training mode updates the running statistics once, as ampc's step does.
        step_loss, step_grads = loss_and_grads(model, image, label)
        if step == 0:
            loss, grads = step_loss, step_grads
        sgd.step()
    after = {n: v.detach().double().numpy().copy() for n, v in list(model.named_parameters()) + list(model.named_buffers())
             if not n.endswith("num_batches_tracked")}
    return loss, grads, after


def export(work):
    torch.manual_seed(0)
    model = resnet18()
    g = torch.Generator().manual_seed(1)
    image = torch.randn(BATCH, 1, 28, 28, generator=g)
    label = torch.randint(0, 10, (BATCH,), generator=g)
    model.train()
    torch.onnx.export(model, image, work + "/model.onnx", opset_version=17,
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                      input_names=["image"], output_names=["logits"], dynamic_axes={"image": {0: "batch"}})
    np.savez(work + "/batch.npz", image=image.numpy(), label=label.numpy())
    out = {}
    for dtype, tag in ((torch.float64, "f64"), (torch.float32, "f32")):
        loss, grads, after = trained(work, dtype, image, label)
        out[tag + "/loss"] = np.array(loss)
        out.update({tag + "/" + k: v for k, v in grads.items()})
        out.update({tag + "/after/" + k: v for k, v in after.items()})
    np.savez(work + "/torch.npz", **out)
    with open(work + "/torch.json", "w") as f:
        json.dump({"lr": LR, "steps": STEPS, "batch": BATCH}, f)


def relative(got, want):
    return float(np.abs(got - want).max() / (np.abs(want).max() or 1.0))


def compare(work, grads_path, checkpoint_path):
    want = np.load(work + "/torch.npz")
    failures = 0

    def check(ok, what):
        nonlocal failures
        print(("ok: " if ok else "FAIL: ") + what)
        failures += not ok

    def against_f64(got, names, what):
        """Each of `names` (keys under f64/ and f32/) within 3x PyTorch f32's own error of f64."""
        missing = [n for n in names if n not in got]
        check(not missing, "%s: all %d present%s" % (what, len(names), (", missing " + missing[0]) if missing else ""))
        ours = {n: relative(got[n], want["f64/" + n]) for n in names if n in got}
        theirs = max(relative(want["f32/" + n], want["f64/" + n]) for n in names)
        worst = max(ours, key=ours.get)
        bound = max(3 * theirs, 1e-6)
        check(ours[worst] <= bound and ours[worst] <= 1e-3,
              "%s within %.2g of PyTorch f64's largest value (3x PyTorch f32's own error, %.2g): worst %s %.2g"
              % (what, bound, theirs, worst, ours[worst]))

    got = read_arrays(grads_path, only_f32=True)
    loss, loss64 = float(got["loss"]), float(want["f64/loss"])
    check(abs(loss - loss64) <= 1e-5 * abs(loss64), "loss %.8g, PyTorch f64 %.8g" % (loss, loss64))
    against_f64(got, sorted(k[4:] for k in want.files if k.startswith("f64/") and k.endswith(".grad")), "gradients")
    after = {"after/" + k: v for k, v in read_arrays(checkpoint_path, only_f32=True).items()}
    names = sorted(k[4:] for k in want.files if k.startswith("f64/after/"))
    stats = [n for n in names if "running_" in n]
    against_f64(after, [n for n in names if n not in stats], "params after %d SGD step(s)" % STEPS)
    check(len(stats) == 40, "40 BatchNorm running statistics")
    against_f64(after, stats, "running statistics after %d step(s) (momentum 0.1, unbiased variance)" % STEPS)
    return 1 if failures else 0


if __name__ == "__main__":
    if sys.argv[1] == "export":
        export(sys.argv[2])
    else:
        sys.exit(compare(*sys.argv[2:5]))
