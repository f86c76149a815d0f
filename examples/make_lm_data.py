#!/usr/bin/env python3
"""Writes a synthetic next-token dataset for examples/transformer_lm.mlir as an .npz.

Each sequence follows a fixed random permutation of the 64-token vocabulary (token t is followed
by perm[t]) from a random start, so the next token is a function of the current one: a model that
learns the bigram table drives the loss from ln(64) = 4.16 towards 0. Arrays: "tokens" [N, 32]
and "next_tokens" [N, 32], int64 (the names are the model's input and label names).
Needs only the Python standard library (no numpy).
"""
import argparse
import random
import struct
import zipfile


def npy_bytes(rows):
    n, t = len(rows), len(rows[0])
    header = "{'descr': '<i8', 'fortran_order': False, 'shape': (%d, %d), }" % (n, t)
    pad = 64 - (10 + len(header) + 1) % 64
    header = header + " " * pad + "\n"
    data = b"".join(struct.pack("<%dq" % t, *row) for row in rows)
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1") + data


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("output")
    ap.add_argument("--sequences", type=int, default=2048)
    ap.add_argument("--length", type=int, default=32)
    ap.add_argument("--vocab", type=int, default=64)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    perm = list(range(args.vocab))
    rng.shuffle(perm)
    tokens, labels = [], []
    for _ in range(args.sequences):
        seq = [rng.randrange(args.vocab)]
        for _ in range(args.length):
            seq.append(perm[seq[-1]])
        tokens.append(seq[:-1])
        labels.append(seq[1:])
    with zipfile.ZipFile(args.output, "w", zipfile.ZIP_STORED) as z:
        z.writestr("tokens.npy", npy_bytes(tokens))
        z.writestr("next_tokens.npy", npy_bytes(labels))


if __name__ == "__main__":
    main()
