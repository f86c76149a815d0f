"""What the PyTorch-parity import tests share: compile an exported model for one f32 training
step, run its grads entry with amp-run, and read the results back."""
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "e2e"))
from safetensors_numpy import read_arrays  # noqa: E402


def grads(work, name, x, y, device, ampc, amp_run):
    """Compiles WORK/NAME.onnx (cross-entropy on its logits, f32) and returns the grads entry's
    results (the loss and every PARAM.grad) for input x and labels y."""
    path = lambda suffix: os.path.join(work, name + suffix)
    np.save(path(".x.npy"), x)
    np.save(path(".y.npy"), y)
    subprocess.run([ampc, path(".onnx"), "--loss=cross_entropy:logits", "--train", "--precision=f32", "-o",
                    path(".ampx")], check=True)
    subprocess.run([amp_run, path(".ampx"), "--device=" + device, "--entry=grads", "--output=" + path(".g.safetensors"),
                    "--input", "x=" + path(".x.npy"), "--input", "label=" + path(".y.npy")],
                   check=True, stdout=subprocess.DEVNULL)
    return {k: v.ravel() for k, v in read_arrays(path(".g.safetensors"), only_f32=True).items()}


def relative_error(have, want):
    """max |have - want| / max |want|; absolute where want is all zero."""
    return np.max(np.abs(have - want)) / max(np.max(np.abs(want)), 1e-30)


def check_against_autograd(work, name, net, x, y, device, ampc, amp_run, tolerance=1e-5):
    """Exports `net` (opset 15, training mode), runs one f32 step of it in ampc and in PyTorch, and
    prints `ok NAME WHAT` or `FAIL NAME WHAT` for the loss and every PARAM.grad. True if any failed."""
    import torch  # the callers have it; this module's other users need only numpy

    torch.onnx.export(net, x, os.path.join(work, name + ".onnx"), opset_version=15, input_names=["x"],
                      output_names=["logits"], training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)
    loss = torch.nn.functional.cross_entropy(net(x), y)
    loss.backward()
    got = grads(work, name, x.numpy(), y.numpy(), device, ampc, amp_run)
    checks = [("loss", got["loss"], np.array([loss.item()]))]
    checks += [(p + ".grad", got[p + ".grad"], t.grad.numpy().ravel()) for p, t in net.named_parameters()]
    failed = False
    for what, have, want in checks:
        err = relative_error(have, want)
        failed |= not err < tolerance
        print(f"{'ok' if err < tolerance else 'FAIL'} {name} {what} rel error {err:.1e}")
    return failed
