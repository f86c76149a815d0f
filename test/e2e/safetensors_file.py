"""Reading the safetensors files amp-run writes (--output, checkpoints) with the standard library
only: the e2e scripts compare their tensors byte for byte (test/e2e/e2e.py, data_parallel.py), and
safetensors_numpy.py builds arrays on it."""
import json
import struct


def read(path):
    """({name: (dtype, shape, raw bytes)}, the file's __metadata__)."""
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


def f32_values(raw):
    """The floats of an F32 tensor's raw bytes."""
    return struct.unpack("<%df" % (len(raw) // 4), raw)
