"""Rewrites one value of an ampc checkpoint and recomputes its sha256 (runtime/train/Checkpoint.h:
SHA-256 over every tensor's name|dtype|shape| and bytes, in name order), so that only a check of
the values can refuse it.

usage: tamper_checkpoint.py IN OUT tensor NAME INDEX VALUE   (VALUE in the tensor's dtype)
       tamper_checkpoint.py IN OUT meta KEY VALUE
"""
import hashlib
import json
import struct
import sys

DTYPES = {"F32": ("f32", "<f", 4), "I64": ("i64", "<q", 8), "I32": ("i32", "<i", 4),
          "BF16": ("bf16", None, 2), "F16": ("f16", "<e", 2)}

src, dst, kind = sys.argv[1:4]
data = open(src, "rb").read()
n = struct.unpack("<Q", data[:8])[0]
header = json.loads(data[8:8 + n])
body = bytearray(data[8 + n:])
meta = header.pop("__metadata__")
if kind == "meta":
    meta[sys.argv[4]] = sys.argv[5]
else:
    name, index, value = sys.argv[4], int(sys.argv[5]), sys.argv[6]
    info = header[name]
    fmt, size = DTYPES[info["dtype"]][1], DTYPES[info["dtype"]][2]
    at = info["data_offsets"][0] + index * size
    body[at:at + size] = struct.pack(fmt, float(value) if fmt in ("<f", "<e") else int(value))
digest = hashlib.sha256()
for name in sorted(header):
    info = header[name]
    shape = "[" + ", ".join(str(d) for d in info["shape"]) + "]"
    digest.update(f"{name}|{DTYPES[info['dtype']][0]}|{shape}|".encode())
    begin, end = info["data_offsets"]
    digest.update(bytes(body[begin:end]))
meta["sha256"] = digest.hexdigest()
header["__metadata__"] = meta
raw = json.dumps(header, separators=(",", ":")).encode()
raw += b" " * (-len(raw) % 8)
open(dst, "wb").write(struct.pack("<Q", len(raw)) + raw + bytes(body))
