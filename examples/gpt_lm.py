#!/usr/bin/env python3
"""A GPT-style character language model, exported from PyTorch to ONNX for ampc, and its data.

    python3 examples/gpt_lm.py OUT_DIR [--layers 2] [--width 128] [--heads 4] [--seq 128]

writes OUT_DIR/gpt.onnx (opset 17, training mode, a symbolic batch dim) and OUT_DIR/text.npz:
"tokens" [N, seq] and "label" [N, seq] (the next character of each position), int64, cut from the
license texts every Debian system ships in /usr/share/common-licenses (package base-files), one
id per distinct byte. Then, as docs/onnx-import.md ("A GPT-style language model") shows:

    ampc OUT_DIR/gpt.onnx --batch=16 --loss=cross_entropy:logits,label=label --train \\
         --precision=bf16 --optimizer=adamw --lr=1e-3 -o gpt.ampx
    amp-run gpt.ampx --data=OUT_DIR/text.npz --steps=200

The model is GPT's decoder: token and learned position embeddings, `layers` pre-norm blocks
(nn.TransformerEncoderLayer with a causal mask, exact GELU, no dropout), a final LayerNorm and a
linear head. Needs torch, onnx and numpy (Debian: python3-torch, python3-onnx).
"""
import argparse
import glob
import os

import numpy as np
import torch

TEXT_FILES = "/usr/share/common-licenses/*"


class GptLM(torch.nn.Module):
    def __init__(self, vocab, width, heads, layers, seq):
        super().__init__()
        self.tok = torch.nn.Embedding(vocab, width)
        self.pos = torch.nn.Parameter(0.02 * torch.randn(1, seq, width))
        self.blocks = torch.nn.ModuleList(
            torch.nn.TransformerEncoderLayer(width, heads, 4 * width, dropout=0.0, batch_first=True, norm_first=True,
                                             activation="gelu") for _ in range(layers))
        self.norm = torch.nn.LayerNorm(width)
        self.head = torch.nn.Linear(width, vocab)
        causal = torch.triu(torch.ones(seq, seq, dtype=torch.bool), diagonal=1)
        self.register_buffer("causal", causal, persistent=False)

    def forward(self, tokens):
        x = self.tok(tokens) + self.pos
        for block in self.blocks:
            x = block(x, src_mask=self.causal)
        return self.head(self.norm(x))


def text_bytes():
    data = b""
    for path in sorted(glob.glob(TEXT_FILES)):
        if os.path.isfile(path):
            with open(path, "rb") as f:
                data += f.read()
    if not data:
        raise SystemExit("no text under %s (Debian's base-files ships it)" % TEXT_FILES)
    return data


def windows(ids, seq):
    """Every window of seq + 1 ids starting at a multiple of seq // 2 (half-overlapping)."""
    stride = seq // 2
    starts = range(0, len(ids) - seq - 1, stride)
    rows = np.stack([ids[s:s + seq + 1] for s in starts])
    return rows[:, :-1].copy(), rows[:, 1:].copy()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--width", type=int, default=128)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    raw = np.frombuffer(text_bytes(), dtype=np.uint8)
    alphabet, ids = np.unique(raw, return_inverse=True)
    tokens, label = windows(ids.astype(np.int64), args.seq)
    np.savez(os.path.join(args.out, "text.npz"), tokens=tokens, label=label)

    torch.manual_seed(args.seed)
    model = GptLM(len(alphabet), args.width, args.heads, args.layers, args.seq)
    example = torch.from_numpy(tokens[:2])
    torch.onnx.export(model, example, os.path.join(args.out, "gpt.onnx"), opset_version=17,
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                      input_names=["tokens"], output_names=["logits"], dynamic_axes={"tokens": {0: "batch"}})
    params = sum(p.numel() for p in model.parameters())
    print("gpt.onnx: %d layers, width %d, %d heads, sequence %d, vocabulary %d, %d params" % (
        args.layers, args.width, args.heads, args.seq, len(alphabet), params))
    print("text.npz: %d sequences of %d characters from %s" % (len(tokens), args.seq, TEXT_FILES))


if __name__ == "__main__":
    main()
