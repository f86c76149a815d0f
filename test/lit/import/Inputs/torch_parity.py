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
