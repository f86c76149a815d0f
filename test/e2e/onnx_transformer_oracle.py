#!/usr/bin/env python3
"""PyTorch's side of e2e.onnx_transformer_torch: exports a small pre-norm transformer language
model (embedding, causal self-attention, exact GELU, head) to ONNX as a user would, and records
what PyTorch autograd computes on the same weights and batch.

Usage: onnx_transformer_oracle.py WORK_DIR   (needs torch, onnx and numpy: Debian's python3-torch)
Writes WORK_DIR/model.onnx, WORK_DIR/batch.npz (tokens, label) and WORK_DIR/torch.json: the loss
and gradients at the exported weights, the loss of each of STEPS SGD steps, and the params after.
"""
import sys

import torch
from torch_sgd import export_and_record_lm

STEPS, LR, BATCH, SEQ, VOCAB, WIDTH = 3, 0.1, 4, 16, 50, 32


class TinyLM(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(VOCAB, WIDTH)
        self.layer = torch.nn.TransformerEncoderLayer(WIDTH, 4, 4 * WIDTH, dropout=0.0, batch_first=True,
                                                      norm_first=True, activation="gelu")
        self.head = torch.nn.Linear(WIDTH, VOCAB)

    def forward(self, tokens):
        t = tokens.shape[1]
        causal = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
        return self.head(self.layer(self.emb(tokens), src_mask=causal))


def main(work):
    torch.manual_seed(0)
    model = TinyLM()
    g = torch.Generator().manual_seed(1)
    tokens = torch.randint(0, VOCAB, (BATCH, SEQ), generator=g)
    label = torch.randint(0, VOCAB, (BATCH, SEQ), generator=g)
    export_and_record_lm(model, tokens, label, VOCAB, STEPS, LR, work)


if __name__ == "__main__":
    main(sys.argv[1])
