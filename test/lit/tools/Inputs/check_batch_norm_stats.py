"""Checks the running statistics in an ampc checkpoint against PyTorch's update, computed here in
f64: after each step on batch x (NCHW), running_mean = (1 - m) * running_mean + m * mean(x) and
running_var = (1 - m) * running_var + m * var(x, unbiased), per channel, from zeros and ones.

usage: check_batch_norm_stats.py CHECKPOINT X.npy PREFIX STEPS MOMENTUM [OTHER_CHECKPOINT]
Prints the largest relative error and 'ok' when it is below 1e-6 (f32 arithmetic on O(1) values)
and, given OTHER_CHECKPOINT, the running statistics there are the same bits.
"""
import json
import struct
import sys

import numpy as np

path, x_path, prefix, steps, momentum = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5])


def load(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    return json.loads(data[8:8 + n]), data[8 + n:]


header, body = load(path)


def tensor(name, header=header, body=body):
    info = header[name]
    assert info["dtype"] == "F32", info
    begin, end = info["data_offsets"]
    return np.frombuffer(body[begin:end], dtype="<f4").astype(np.float64)


x = np.load(x_path).astype(np.float64)
axes = (0,) + tuple(range(2, x.ndim))
mean, var = x.mean(axis=axes), x.var(axis=axes, ddof=1)
want_mean, want_var = np.zeros_like(mean), np.ones_like(var)
for _ in range(steps):
    want_mean = (1 - momentum) * want_mean + momentum * mean
    want_var = (1 - momentum) * want_var + momentum * var
got_mean, got_var = tensor(prefix + ".running_mean"), tensor(prefix + ".running_var")
err = max(np.max(np.abs(got_mean - want_mean) / np.maximum(np.abs(want_mean), 1e-3)),
          np.max(np.abs(got_var - want_var) / np.abs(want_var)))
print(f"running_mean {got_mean.tolist()} running_var {got_var.tolist()} max rel error {err:.2e}")
same = True
if len(sys.argv) > 6:
    other_header, other_body = load(sys.argv[6])
    for name in (prefix + ".running_mean", prefix + ".running_var"):
        same &= tensor(name).tobytes() == tensor(name, other_header, other_body).tobytes()
print("ok" if err < 1e-6 and same else "MISMATCH (same bits: %s)" % same)
