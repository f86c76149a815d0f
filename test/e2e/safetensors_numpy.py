"""Reading the safetensors files amp-run writes (--output, checkpoints) as numpy arrays, for the
test scripts that compare them with PyTorch or ONNX (test/e2e/onnx_resnet_oracle.py,
import/onnx/scripts/node_conformance.py)."""
import numpy as np

from safetensors_file import read

DTYPES = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I64": np.int64, "I32": np.int32,
          "BOOL": np.bool_, "U8": np.uint8}


def read_arrays(path, only_f32=False):
    """{name: array} of the file's tensors (bf16 widened to f32); with only_f32, the f32 ones as f64."""
    tensors, _ = read(path)
    out = {}
    for name, (dtype, shape, raw) in tensors.items():
        if only_f32 and dtype != "F32":
            continue
        if dtype == "BF16":
            value = (np.frombuffer(raw, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)
        else:
            value = np.frombuffer(raw, dtype=DTYPES[dtype])
        out[name] = value.reshape(shape).astype(np.float64) if only_f32 else value.reshape(shape)
    return out
