"""python3 -m ampc export-onnx MODEL.onnx WEIGHTS.safetensors -o TRAINED.onnx

The CLI's half of Trainer.export_onnx: amp-run links no ONNX library, so the inference ONNX of a
model trained with `amp-run --export=WEIGHTS.safetensors` (or the params of a checkpoint) is
written here, from the training-mode ONNX the bundle was compiled from.
"""
import argparse
import json
import sys

import numpy as np

from . import _torch_export

_DTYPES = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I64": np.int64, "I32": np.int32,
           "U8": np.uint8, "BOOL": np.bool_}


def read_safetensors(path):
    """name -> numpy array (the formats numpy has; bf16 values are refused by name)."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        raise ValueError(f"{path}: not a safetensors file (shorter than its header length)")
    n = int.from_bytes(data[:8], "little")
    if n > len(data) - 8:
        raise ValueError(f"{path}: header length {n} exceeds the file")
    header = json.loads(data[8:8 + n])
    body = memoryview(data)[8 + n:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] not in _DTYPES:
            raise ValueError(f"{path}: '{name}' is {info['dtype']}, which numpy cannot hold")
        begin, end = info["data_offsets"]
        out[name] = np.frombuffer(body[begin:end], _DTYPES[info["dtype"]]).reshape(info["shape"])
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m ampc", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    export = sub.add_parser("export-onnx", help="the inference ONNX of a model with trained weights")
    export.add_argument("model", help="the training-mode .onnx the bundle was compiled from")
    export.add_argument("weights", help="amp-run --export's .safetensors, or a checkpoint.safetensors")
    export.add_argument("-o", "--output", required=True)
    args = parser.parse_args(argv)
    values = read_safetensors(args.weights)
    replaced = _torch_export.export_inference(args.model, values, args.output)
    print(f"{args.output}: {len(replaced)} initializers set from {args.weights}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
