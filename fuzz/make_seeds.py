#!/usr/bin/env python3
"""Writes the seed corpus of one fuzz target (scripts/fuzz.sh calls it; docs/reliability.md).

Usage: make_seeds.py TARGET OUT_DIR SRC_DIR BIN_DIR

Seeds come from the tests and from the tools: the .npy/.npz fixtures of test/unit/io, small files
of every format written here (standard library only), bundles compiled by BIN_DIR/ampc from
examples/ and from every test/lit model (split at '// -----'), checkpoints written by a short
BIN_DIR/amp-run of fuzz/models/tiny.mlir, the policy files of test/lit and docs. Nothing is
committed: the corpus is regenerated on every run.
"""
import glob
import gzip
import hashlib
import io
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
import zipfile

TARGET, OUT, SRC, BIN = sys.argv[1:5]
os.makedirs(OUT, exist_ok=True)
WORK = tempfile.mkdtemp(prefix="amp-seeds-")
# The tools are sanitized: a leak report at their exit must not fail the seeding (the fuzzers and
# scripts/sanitize.sh are where leaks are looked for).
ENV = dict(os.environ, ASAN_OPTIONS="detect_leaks=0:allow_user_poisoning=0", CXX=os.environ.get("CXX", "g++"))


def put(data, hint=""):
    name = hashlib.sha1(data).hexdigest()[:16] + hint
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)


def run(*args):
    return subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=ENV).returncode == 0


# --- tensor formats ---------------------------------------------------------------------------

def npy(descr, shape, payload):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        descr, "".join("%d, " % d for d in shape))
    header += " " * (64 - (10 + len(header) + 1) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1") + payload


def small_npys():
    return [
        npy("<f4", (2, 3), struct.pack("<6f", 0, 1, 2, 3, 4, 5)),
        npy("<f2", (4,), struct.pack("<4e", 1, -2, 0.5, 65504)),
        npy("<f8", (), struct.pack("<d", 3.25)),
        npy("<i8", (3,), struct.pack("<3q", -1, 0, 2**40)),
        npy("<i4", (2, 2), struct.pack("<4i", 1, 2, 3, 4)),
        npy("|u1", (5,), bytes(range(5))),
        npy("|b1", (2,), b"\x00\x01"),
        npy("<f4", (0, 4), b""),
    ]


def fixtures():
    """The byte arrays of test/unit/io/NumpyFixtures.inc (written by CPython's zipfile)."""
    text = open(os.path.join(SRC, "test/unit/io/NumpyFixtures.inc")).read()
    out = {}
    for name, body in re.findall(r"static const unsigned char (\w+)\[\] = \{([^}]*)\}", text):
        out[name] = bytes(int(x, 16) for x in re.findall(r"0x[0-9a-fA-F]{2}", body))
    return out


def npz(members, compression, zip64=False):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=compression, allowZip64=True) as z:
        for name, blob in members:
            info = zipfile.ZipInfo(name + ".npy", date_time=(2024, 1, 2, 3, 4, 6))
            info.compress_type = compression
            with z.open(info, "w", force_zip64=zip64) as f:
                f.write(blob)
    return buf.getvalue()


def npz_forced_zip64(members, deflate=False):
    """An archive laid out like writeNpz(..., {compress, forceZip64 = true}): every size and offset
    in the central directory is 0xFFFFFFFF with its value in a ZIP64 extra field, and ZIP64 end
    records; CPython's zipfile only puts ZIP64 fields in the local headers."""
    import zlib
    out, central = b"", b""
    for name, blob in members:
        name = (name + ".npy").encode()
        data = blob
        if deflate:
            c = zlib.compressobj(6, zlib.DEFLATED, -15)
            data = c.compress(blob) + c.flush()
        crc, offset, method = zlib.crc32(blob), len(out), 8 if deflate else 0
        out += struct.pack("<IHHHHHIIIHH", 0x04034b50, 45, 0, method, 0, 33, crc, 0xFFFFFFFF, 0xFFFFFFFF,
                           len(name), 20) + name + struct.pack("<HHQQ", 1, 16, len(blob), len(data)) + data
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014b50, 3 << 8 | 45, 45, 0, method, 0, 33, crc,
                               0xFFFFFFFF, 0xFFFFFFFF, len(name), 28, 0, 0, 0, 0o100644 << 16, 0xFFFFFFFF)
        central += name + struct.pack("<HHQQQ", 1, 24, len(blob), len(data), offset)
    n, cd_offset, cd_size = len(members), len(out), len(central)
    z64 = cd_offset + cd_size
    central += struct.pack("<IQHHIIQQQQ", 0x06064b50, 44, 3 << 8 | 45, 45, 0, 0, n, n, cd_size, cd_offset)
    central += struct.pack("<IIQI", 0x07064b50, 0, z64, 1)
    central += struct.pack("<IHHHHIIH", 0x06054b50, 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    return out + central


def safetensors(tensors, metadata=None):
    header, data = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape, blob in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(blob)]}
        data += blob
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw + data


def idx(type_code, shape, payload):
    return b"\x00\x00" + bytes([type_code, len(shape)]) + b"".join(struct.pack(">I", d) for d in shape) + payload


# --- compiled artifacts -----------------------------------------------------------------------

def models():
    """(name, text) of every model in examples/ and test/lit (lit files split at '// -----')."""
    out = []
    for path in sorted(glob.glob(os.path.join(SRC, "examples", "*.mlir")) +
                       glob.glob(os.path.join(SRC, "fuzz", "models", "*.mlir")) +
                       glob.glob(os.path.join(SRC, "test", "lit", "**", "*.mlir"), recursive=True)):
        parts = open(path).read().split("// -----")
        for i, part in enumerate(parts):
            out.append(("%s.%d" % (os.path.relpath(path, SRC).replace("/", "_"), i), part.strip() + "\n"))
    return out


BUNDLE_FLAGS = [
    ["--train", "--precision=f16", "--optimizer=adamw"],
    ["--train", "--precision=bf16", "--optimizer=sgd", "--clip-grad-norm=1"],
    ["--train", "--precision=f32", "--optimizer=adam", "--accumulate=2", "--schedule=cosine", "--total-steps=10"],
    ["--precision=bf16"],
]


# The examples with every dimension shrunk (one map for all dims, so equal sizes stay equal:
# the transformer's vocabulary and d_model are both 64, its MLP width and B*T both 256).
SMALL_DIMS = {"784": "12", "128": "4", "256": "8", "64": "8", "32": "4", "16": "2", "8": "2"}


def shrink(text):
    """Every tensor type's dimensions through SMALL_DIMS, and each dense list constant cut to the
    values its shrunk type holds."""
    def dims(m):
        return "tensor<" + "x".join(SMALL_DIMS.get(d, d) for d in m.group(1).split("x")) + "x"
    text = re.sub(r"tensor<((?:\d+x)*\d+)x", dims, text)

    def constant(m):
        shape = [int(d) for d in m.group(2).split("x")]
        count = 1
        for d in shape:
            count *= d
        values = re.findall(r"-?[0-9.]+(?:e[+-]?[0-9]+)?", m.group(1))[:count]
        body = ", ".join(("[%s]" if len(shape) == 2 and shape[1] == 1 else "%s") % v for v in values)
        return "dense<[%s]> : tensor<%sx" % (body, m.group(2))
    return re.sub(r"dense<(\[[^>]*\])> : tensor<((?:\d+x)*\d+)x", constant, text)


def small_examples():
    """(name, text) of each example with small shapes: the same ops and structure, a fraction of
    the params to initialise and of the plan to parse per input (bundle-plan's throughput)."""
    out = []
    for path in sorted(glob.glob(os.path.join(SRC, "examples", "*.mlir"))):
        text = shrink(open(path).read())
        out.append(("small_" + os.path.basename(path).replace(".", "_"), text))
    return out


def bundles(limit_models=None, small=False):
    ampc = os.path.join(BIN, "ampc")
    out = []
    for k, (name, text) in enumerate(small_examples() if small else models()):
        if limit_models is not None and k >= limit_models:
            break
        model = os.path.join(WORK, name + ".mlir")
        with open(model, "w") as f:
            f.write(text)
        for j, flags in enumerate(BUNDLE_FLAGS):
            # examples/ get every flag set; a lit model the first set that compiles.
            bundle = os.path.join(WORK, "%s.%d.ampx" % (name, j))
            if run(ampc, model, "--target=cpu:generic", "--native-kernels=false", *flags, "-o", bundle):
                out.append(bundle)
                if not name.startswith(("examples_", "small_")):
                    break
    if small:
        return out
    # One with native kernels (the cpu device checks and loads its code objects).
    native = os.path.join(WORK, "mlp-native.ampx")
    if run(ampc, os.path.join(SRC, "examples/mlp.mlir"), "--train", "--precision=f16", "--target=cpu:generic",
           "-o", native):
        out.append(native)
    return out


def cuda_bundles():
    """Bundles for the cuda device: the small examples and the cuda test models (every op the
    device has a kernel for, convolutions included). Each holds every kernel's cubin and PTX
    (about 5 MB); ampc built without the CUDA toolkit (NVRTC) cannot write them."""
    ampc = os.path.join(BIN, "ampc")
    sources = small_examples() + [("cuda_" + os.path.basename(p).replace(".", "_"), open(p).read())
                                  for p in sorted(glob.glob(os.path.join(SRC, "test/unit/cuda/models/*.mlir")))]
    out = []
    for name, text in sources:
        model = os.path.join(WORK, name + ".mlir")
        with open(model, "w") as f:
            f.write(text)
        # Each compile takes NVRTC about 20 s: every model once for sm_90, the first also with
        # another flag set, with cuBLASLt's training epilogues (amp.gemm_epilogue) and for sm_80
        # (the PTX path on an sm_90 GPU).
        variants = [(BUNDLE_FLAGS[0], "cuda:sm_90")]
        if not out:
            variants += [(BUNDLE_FLAGS[1], "cuda:sm_90"), (BUNDLE_FLAGS[1] + ["--gemm-epilogues=cublaslt"], "cuda:sm_90"),
                         (BUNDLE_FLAGS[3], "cuda:sm_80")]
        for j, (flags, target) in enumerate(variants):
            bundle = os.path.join(WORK, "%s.cuda%d.ampx" % (name, j))
            if run(ampc, model, "--target=" + target, *flags, "-o", bundle):
                out.append(bundle)
    if not out:
        sys.exit("make_seeds: %s wrote no cuda bundle (it needs the CUDA toolkit's NVRTC)" % ampc)
    return out


def checkpoints():
    ampc, amp_run = os.path.join(BIN, "ampc"), os.path.join(BIN, "amp-run")
    bundle = os.path.join(WORK, "tiny.ampx")
    if not run(ampc, os.path.join(SRC, "fuzz/models/tiny.mlir"), "--train", "--precision=f16", "--optimizer=adamw",
               "--clip-grad-norm=1", "--native-kernels=false", "--target=cpu:generic", "-o", bundle):
        sys.exit("make_seeds: ampc cannot compile fuzz/models/tiny.mlir")
    xs = struct.pack("<64f", *[(i % 7) / 7.0 for i in range(64)])
    ys = struct.pack("<8q", *[i % 4 for i in range(8)])
    data = os.path.join(WORK, "tiny.npz")
    with open(data, "wb") as f:
        f.write(npz([("x", npy("<f4", (8, 8), xs)), ("y", npy("<i8", (8,), ys))], zipfile.ZIP_STORED))
    out = []
    for device, steps, seed in (("reference", 1, 0), ("reference", 3, 7), ("cpu", 2, 1), ("cpu", 5, 3)):
        ckpt = os.path.join(WORK, "ckpt-%s-%d" % (device, steps))
        if run(amp_run, bundle, "--device=" + device, "--data=" + data, "--steps=%d" % steps, "--seed=%d" % seed,
               "--checkpoint=" + ckpt, "--eval-every=1000000"):
            out.append(open(os.path.join(ckpt, "checkpoint.safetensors"), "rb").read())
    if not out:
        sys.exit("make_seeds: amp-run wrote no checkpoint of fuzz/models/tiny.mlir")
    return out


def policies():
    out = [open(p, "rb").read() for p in sorted(glob.glob(os.path.join(SRC, "test/lit/passes/Inputs/*.json")))]
    doc = open(os.path.join(SRC, "docs/precision-policy.md")).read()
    out += [b.encode() for b in re.findall(r"```json\n(.*?)```", doc, re.S)]
    out.append(json.dumps({"version": 1, "base": "pytorch",
                           "lists": {"fp32": {"add": ["amp.reduce_*"]}, "lower_precision_fp": ["matmul", "linear"]},
                           "overrides": [{"loc": "block.attn.*", "precision": "f32"},
                                         {"op": "amp.softmax", "precision": "bf16"}]}).encode())
    return out


OPTION_LINES = ["", "// ampc-fuzz: precision=bf16 optimizer=sgd clip=1\n",
                "// ampc-fuzz: precision=f32 train=0\n",
                "// ampc-fuzz: precision=f16 loss-scaling=static accumulate=2 schedule=cosine total-steps=10\n",
                "// ampc-fuzz: precision=bf16 policy=tensorflow fuse=0 optimizer=adam\n"]


def main():
    if TARGET == "npy":
        for b in small_npys():
            put(b)
        for name, blob in fixtures().items():
            if name.startswith("kNpy"):
                put(blob)
    elif TARGET == "npz":
        members = [("a", small_npys()[0]), ("b", small_npys()[3]), ("c", small_npys()[5])]
        for compression in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            for zip64 in (False, True):
                put(npz(members, compression, zip64))
        put(npz([], zipfile.ZIP_STORED))
        put(npz_forced_zip64(members))
        put(npz_forced_zip64(members, deflate=True))
        for name, blob in fixtures().items():
            if name.startswith("kNpz"):
                put(blob)
    elif TARGET == "safetensors":
        put(safetensors([("a", "F32", [2, 2], struct.pack("<4f", 1, 2, 3, 4)),
                         ("b", "BF16", [3], b"\x80\x3f\x00\x40\x40\x40"),
                         ("c", "I64", [], struct.pack("<q", 7)),
                         ("d", "BOOL", [0], b"")], {"format": "pt", "k": "v"}))
        put(safetensors([("e", "F8_E4M3", [4], b"\x01\x02\x03\x04"), ("f", "F16", [1, 1], b"\x00\x3c")]))
        put(safetensors([]))
        for c in checkpoints()[:2]:
            put(c)
    elif TARGET == "idx":
        put(idx(0x08, [3, 2], bytes(6)))
        put(idx(0x08, [4], bytes([1, 2, 3, 9])))
        put(idx(0x0C, [2], struct.pack(">2i", -1, 5)))
        put(idx(0x0D, [1, 2], struct.pack(">2f", 1.5, -2)))
        put(idx(0x0E, [], struct.pack(">d", 3.0)))
        put(gzip.compress(idx(0x08, [2, 2, 2], bytes(range(8))), mtime=0))
        labels = "/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz"
        if os.path.exists(labels):
            put(open(labels, "rb").read())
    elif TARGET == "bundle":
        for b in bundles():
            data = open(b, "rb").read()
            if len(data) <= 256 * 1024:  # larger ones only slow every mutation down
                put(data, ".ampx")
    elif TARGET == "bundle-plan":
        # Every input here is parsed, validated, initialised and prepared on two devices, so the
        # examples come with small shapes (the bundle target keeps their full-size bundles).
        for b in bundles() + bundles(small=True):
            data = open(b, "rb").read()
            if len(data) <= 48 * 1024 and "examples_" not in os.path.basename(b):
                put(data, ".ampx")
    elif TARGET == "bundle-cuda":
        for b in cuda_bundles():
            put(open(b, "rb").read(), ".ampx")
    elif TARGET == "checkpoint":
        for c in checkpoints():
            put(c)
    elif TARGET == "policy":
        for p in policies():
            put(p, ".json")
    elif TARGET == "ir":
        for _, text in models():
            put(text.encode(), ".mlir")
    elif TARGET == "pipeline":
        for k, (_, text) in enumerate(models()):
            put(text.encode(), ".mlir")
            put((OPTION_LINES[1 + k % (len(OPTION_LINES) - 1)] + text).encode(), ".mlir")
    elif TARGET == "onnx":
        # ONNX's own backend tests (libonnx-testdata: node, pytorch-converted, pytorch-operator,
        # simple; the zoo models of real/ are external-data stubs without weights), the import
        # tests' models and the hostile models of test/lit/import.
        for path in sorted(glob.glob("/usr/share/libonnx-testdata/data/*/*/model.onnx")):
            data = open(path, "rb").read()
            if len(data) <= 64 * 1024:
                put(data, ".onnx")
        inputs = os.path.join(SRC, "test", "lit", "import", "Inputs")
        python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
        for script in ("make_model.py", "make_hostile.py"):
            listing = subprocess.run([python, "-c", "import sys; sys.path.insert(0, %r); import %s as m; "
                                      "print(' '.join(m.MODELS))" % (inputs, script[:-3])],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            for name in listing.stdout.split():
                out = os.path.join(WORK, name + ".onnx")
                if subprocess.run([python, os.path.join(inputs, script), name, out], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL).returncode == 0:
                    put(open(out, "rb").read(), ".onnx")
        out = os.path.join(WORK, "external.onnx")
        if subprocess.run([python, os.path.join(inputs, "make_hostile.py"), "external", out, "data.bin", "0", "16"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0:
            put(open(out, "rb").read(), ".onnx")
    else:
        sys.exit("make_seeds: unknown target '%s'" % TARGET)
    print("make_seeds: %s: %d seeds in %s" % (TARGET, len(os.listdir(OUT)), OUT))


main()
