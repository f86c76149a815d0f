"""What the PyTorch-parity import tests share: compile an exported model for one f32 training
step, run its grads entry with amp-run, and read the results back."""
import json
import os
import struct
import subprocess

import numpy as np


def f32_tensors(path):
    """The f32 tensors of a safetensors file, as float64 arrays by name."""
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header, body = json.loads(data[8:8 + n]), data[8 + n:]
    return {k: np.frombuffer(body[v["data_offsets"][0]:v["data_offsets"][1]], dtype="<f4").astype(np.float64)
            for k, v in header.items() if k != "__metadata__" and v["dtype"] == "F32"}


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
    return f32_tensors(path(".g.safetensors"))


def relative_error(have, want):
    """max |have - want| / max |want|; absolute where want is all zero."""
    return np.max(np.abs(have - want)) / max(np.max(np.abs(want)), 1e-30)
